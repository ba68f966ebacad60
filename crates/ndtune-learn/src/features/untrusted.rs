//! Kernels from clients that are not trusted (the service's `POST /v1/predict`): what makes
//! sure that compiling one reads and writes no file of the server.
//!
//! clang reads files where the source or the options name them. The options are an allow-list:
//! `-D NAME[=VALUE]`, `-U NAME` and OpenCL's `-cl-*` flags, nothing else (an `@file`, `-o`,
//! `-MF`, `-I`, `-fplugin=`, `-Xclang` or a bare path are refused). The source may use the
//! preprocessor for macros and conditions only: a directive that reads a file (`#include`,
//! `#include_next`, `#import`, `#embed`) and every other directive outside an allow-list is
//! refused, as are `__has_include`-like operators, `_Pragma`, and token pasting (`##`), which
//! could assemble either; `#pragma` is allowed for `OPENCL`, `unroll` and `nounroll`. The scan
//! works on the logical lines clang sees (a lone carriage return ends a line, backslash-newline
//! joined, comments and literals skipped, also between `#` and a directive's name, a byte-order
//! mark, form and line feeds are white space, the digraphs `%:` and `%:%:` read as `#` and `##`;
//! trigraphs are turned off in the compile).
//!
//! The scan is an early, friendly error, not the wall: a scanner that re-implements clang's lexer
//! can always miss a spelling. The wall is the operating system's ([`super::client_sandbox`]):
//! the compile cannot open any file but clang's own, whatever the source says. It also runs
//! without the system include directories, with an empty environment, a time and a memory limit
//! ([`ndtune_core::bounded`]).

use ndtune_core::text::is_identifier;
use std::time::Duration;

/// The wall-clock limit of one compile of a client's kernel.
/// Below the service's default request timeout (10 s), so that a request answered 408 leaves no
/// clang running for long.
pub const TIME_LIMIT: Duration = Duration::from_secs(5);
/// The address-space limit of one compile of a client's kernel.
pub const MEMORY_LIMIT: u64 = 2 << 30;

/// Directives a client's kernel may use.
const DIRECTIVES: [&str; 14] = [
    "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif",
    "error", "warning", "line", "pragma",
];
/// The first word of the pragmas a client's kernel may use.
const PRAGMAS: [&str; 3] = ["OPENCL", "unroll", "nounroll"];
/// Identifiers that reach files or run pragmas from inside an expression.
const OPERATORS: [&str; 6] = [
    "_Pragma",
    "__has_include",
    "__has_include_next",
    "__has_embed",
    "__has_import",
    "__building_module",
];

/// Checks a client's build options against the allow-list; returns them as clang's arguments.
pub fn check_options(options: &str) -> Result<Vec<String>, String> {
    let words: Vec<&str> = options.split_whitespace().collect();
    let mut args = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let word = words[i];
        let (flag, value) = match word {
            "-D" | "-U" => {
                let value = words.get(i + 1).ok_or_else(|| {
                    format!("`options`: `{word}` needs a macro name after it")
                })?;
                i += 1;
                (&word[..2], *value)
            }
            _ if word.starts_with("-D") || word.starts_with("-U") => (&word[..2], &word[2..]),
            _ if word.starts_with("-cl-") && !word.contains(['/', '@']) => {
                args.push(word.to_string());
                i += 1;
                continue;
            }
            _ => {
                return Err(format!(
                    "`options`: `{word}` is not allowed in a request; only -D NAME[=VALUE], -U NAME and -cl-* flags are"
                ))
            }
        };
        let (name, body) = value.split_once('=').unwrap_or((value, ""));
        if !is_identifier(name) || (flag == "-U" && value.contains('=')) {
            return Err(format!(
                "`options`: `{flag} {value}`: `{name}` is not a macro name"
            ));
        }
        scan(body).map_err(|e| format!("`options`: `{flag} {value}`: {}", e.1))?;
        args.push(format!("{flag}{value}"));
        i += 1;
    }
    Ok(args)
}

/// Checks a client's kernel source: `Err` names the line and what is not allowed.
pub fn check_source(source: &str) -> Result<(), String> {
    scan(source).map_err(|(line, why)| format!("`source` line {line}: {why}"))
}

/// The scan of the module's header: `Err((line, why))` at the first thing not allowed.
fn scan(source: &str) -> Result<(), (usize, String)> {
    // Phase 2: backslash-newline joins lines; each character keeps its physical line.
    let mut chars: Vec<(char, usize)> = Vec::with_capacity(source.len());
    let mut line = 1;
    // A lone carriage return ends a line as a newline does.
    let source = source.replace("\r\n", "\n").replace('\r', "\n");
    let mut it = source.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\\' {
            // Whitespace between the backslash and the newline is a splice too in clang.
            let mut ahead = it.clone();
            let mut skipped = 0;
            while matches!(ahead.peek(), Some(' ' | '\t' | '\x0b' | '\x0c')) {
                ahead.next();
                skipped += 1;
            }
            if ahead.peek() == Some(&'\n') {
                for _ in 0..=skipped {
                    it.next();
                }
                line += 1;
                continue;
            }
        }
        chars.push((c, line));
        if c == '\n' {
            line += 1;
        }
    }
    let at = |i: usize| chars.get(i).map(|&(c, _)| c);
    let mut i = 0;
    // Whether only whitespace came since the last newline: a `#` there starts a directive.
    let mut line_start = true;
    while i < chars.len() {
        let (c, here) = chars[i];
        match c {
            '\n' => {
                line_start = true;
                i += 1;
            }
            ' ' | '\t' | '\x0b' | '\x0c' | '\u{feff}' => i += 1,
            '/' if at(i + 1) == Some('/') => {
                while i < chars.len() && chars[i].0 != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == Some('*') => {
                i += 2;
                while i < chars.len() && !(chars[i].0 == '*' && at(i + 1) == Some('/')) {
                    i += 1;
                }
                i += 2;
            }
            '"' | '\'' => {
                i += 1;
                while i < chars.len() && chars[i].0 != c && chars[i].0 != '\n' {
                    i += if chars[i].0 == '\\' { 2 } else { 1 };
                }
                i += 1;
                line_start = false;
            }
            '#' | '%' if c == '#' || at(i + 1) == Some(':') => {
                let width = if c == '#' { 1 } else { 2 };
                let pasting = match c {
                    '#' => at(i + 1) == Some('#'),
                    _ => at(i + 2) == Some('%') && at(i + 3) == Some(':'),
                };
                if pasting {
                    return Err((
                        here,
                        "token pasting (`##`) is not allowed in a request".into(),
                    ));
                }
                i += width;
                if line_start {
                    // Between `#` and the directive's name: white space and comments.
                    loop {
                        match at(i) {
                            Some(' ' | '\t' | '\x0b' | '\x0c') => i += 1,
                            Some('/') if at(i + 1) == Some('*') => {
                                i += 2;
                                while i < chars.len()
                                    && !(chars[i].0 == '*' && at(i + 1) == Some('/'))
                                {
                                    i += 1;
                                }
                                // Past the `*/`, or at the end where the comment is unclosed.
                                i = (i + 2).min(chars.len());
                            }
                            _ => break,
                        }
                    }
                    let start = i;
                    while at(i).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                        i += 1;
                    }
                    let name: String = chars[start..i].iter().map(|&(c, _)| c).collect();
                    directive(&name, &chars[i..]).map_err(|why| (here, why))?;
                }
                line_start = false;
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while at(i).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().map(|&(c, _)| c).collect();
                if OPERATORS.contains(&word.as_str()) {
                    return Err((here, format!("`{word}` is not allowed in a request")));
                }
                line_start = false;
            }
            _ => {
                i += 1;
                line_start = false;
            }
        }
    }
    Ok(())
}

/// Whether directive `name` (the rest of its line after it in `rest`) is allowed.
fn directive(name: &str, rest: &[(char, usize)]) -> Result<(), String> {
    if name.is_empty() {
        return Ok(()); // the null directive, or `#` before something that is no directive name
    }
    if !DIRECTIVES.contains(&name) {
        return Err(match name {
            "include" | "include_next" | "import" | "embed" => format!(
                "`#{name}` is not allowed in a request: the service reads no file; send the kernel with its headers inlined"
            ),
            _ => format!("the directive `#{name}` is not allowed in a request"),
        });
    }
    if name == "pragma" {
        let text: String = rest
            .iter()
            .map(|&(c, _)| c)
            .take_while(|&c| c != '\n')
            .collect();
        let first = text.split_whitespace().next().unwrap_or("");
        if !PRAGMAS.contains(&first) {
            return Err(format!(
                "`#pragma {first}` is not allowed in a request; only #pragma {} are",
                PRAGMAS.join(", ")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_and_ways_around_the_scan_are_refused() {
        for (source, why) in [
            ("#include \"/etc/shadow\"\n", "`#include` is not allowed"),
            ("  #  include </etc/passwd>\n", "`#include` is not allowed"),
            ("%:include \"/etc/shadow\"\n", "`#include` is not allowed"),
            ("#\\\ninclude \"x\"\n", "`#include` is not allowed"),
            ("#inc\\\nlude \"x\"\n", "`#include` is not allowed"),
            ("/* a */ #include_next <x>\n", "`#include_next`"),
            ("#embed \"/dev/zero\"\n", "`#embed`"),
            ("#import \"x\"\n", "`#import`"),
            ("#pragma GCC dependency \"/etc/shadow\"\n", "`#pragma GCC`"),
            (
                "#if __has_include(\"/etc/shadow\")\n#endif\n",
                "`__has_include`",
            ),
            (
                "#define P _Pragma(\"GCC dependency \\\"/etc/x\\\"\")\n",
                "`_Pragma`",
            ),
            ("#define J(a, b) a ## b\n", "token pasting"),
            ("#define J(a, b) a %:%: b\n", "token pasting"),
            ("#ident \"x\"\n", "`#ident`"),
            // Spellings clang accepts that an earlier scan let through.
            (
                "#/**/include \"/etc/shadow\"\n",
                "`#include` is not allowed",
            ),
            (
                "# /* a\n b */ include \"/etc/shadow\"\n",
                "`#include` is not allowed",
            ),
            (
                "int x;\r#include \"/etc/shadow\"\r",
                "`#include` is not allowed",
            ),
            (
                "\u{feff}#include \"/etc/shadow\"\n",
                "`#include` is not allowed",
            ),
            (
                "\x0c#\x0binclude \"/etc/shadow\"\n",
                "`#include` is not allowed",
            ),
            (
                "\x0b#\x0cinclude \"/etc/shadow\"\n",
                "`#include` is not allowed",
            ),
            ("#inc\\\r\nlude \"x\"\n", "`#include` is not allowed"),
        ] {
            let e = check_source(source).unwrap_err();
            assert!(e.contains(why), "{source:?}: {e}");
        }
        assert!(check_source("\n\n#include \"x\"")
            .unwrap_err()
            .contains("line 3"));
    }

    #[test]
    fn ordinary_kernels_pass() {
        let kernel = "// #include \"in a comment\"\n#define WG 8\n#if WG > 4 // ok\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n#\nkernel void k(global float *a) {\n  const char *s = \"#include \\\"x\\\" _Pragma ##\";\n  a[get_global_id(0)] *= 2.0f; /* # */\n  #pragma unroll 4\n  for (int i = 0; i < 4; ++i) a[i] += 1;\n}\n";
        check_source(kernel).unwrap();
    }

    #[test]
    fn options_are_an_allow_list() {
        assert_eq!(
            check_options("-D N=1024 -DWG=8 -U X -cl-mad-enable -cl-std=CL2.0").unwrap(),
            [
                "-DN=1024",
                "-DWG=8",
                "-UX",
                "-cl-mad-enable",
                "-cl-std=CL2.0"
            ]
        );
        for bad in [
            "@/etc/passwd",
            "-o /tmp/victim",
            "-MD -MF /tmp/victim",
            "-fplugin=/tmp/x.so",
            "-Xclang -load -Xclang /tmp/x.so",
            "-I /etc",
            "/etc/passwd",
            "-D",
            "-D 1X=2",
            "-DX=_Pragma(\"x\")",
            "-DX=a##b",
            "-cl-ext=@/etc/passwd",
        ] {
            assert!(check_options(bad).is_err(), "{bad} passed");
        }
    }
}
