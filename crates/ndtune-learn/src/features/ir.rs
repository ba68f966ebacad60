//! Static statistics of textual LLVM IR: instructions per opcode, basic blocks, loops, memory
//! accesses per OpenCL address space and calls per kind of callee.
//!
//! The IR is read as text, one instruction per line of a function body (`define ... {` to `}`),
//! so no LLVM library is needed. Pointers may be typed (`float addrspace(1)*`, clang up to 16) or
//! opaque (`ptr addrspace(1)`, clang 15 and later).

/// The opcodes counted one by one, in column order; any other opcode counts as `other`. Fixed, so
/// that the feature columns do not depend on the kernels seen.
pub(super) const OPCODES: [&str; 35] = [
    "add",
    "sub",
    "mul",
    "sdiv",
    "udiv",
    "srem",
    "urem",
    "fadd",
    "fsub",
    "fmul",
    "fdiv",
    "shl",
    "lshr",
    "ashr",
    "and",
    "or",
    "xor",
    "load",
    "store",
    "getelementptr",
    "alloca",
    "icmp",
    "fcmp",
    "br",
    "phi",
    "select",
    "call",
    "trunc",
    "zext",
    "sext",
    "sitofp",
    "fptosi",
    "extractelement",
    "insertelement",
    "shufflevector",
];

/// Opcodes that end a basic block: every block ends with exactly one.
const TERMINATORS: [&str; 11] = [
    "ret",
    "br",
    "switch",
    "indirectbr",
    "invoke",
    "callbr",
    "resume",
    "unreachable",
    "catchswitch",
    "catchret",
    "cleanupret",
];

/// OpenCL address spaces by their SPIR number (private 0, global 1, constant 2, local 3).
pub(super) const SPACES: [&str; 4] = ["private", "global", "constant", "local"];

/// Kinds of callee, in column order: OpenCL work-item functions (`get_global_id`, ...),
/// barriers, LLVM intrinsics (`llvm.fmuladd`, `llvm.lifetime.start`, ...), anything else (math
/// built-ins, `vload`, atomics, functions that were not inlined, indirect calls).
pub(super) const CALL_KINDS: [&str; 4] = ["work_item", "barrier", "intrinsic", "other"];

const WORK_ITEM_FUNCTIONS: [&str; 11] = [
    "get_work_dim",
    "get_global_size",
    "get_global_id",
    "get_local_size",
    "get_local_id",
    "get_enqueued_local_size",
    "get_num_groups",
    "get_group_id",
    "get_global_offset",
    "get_global_linear_id",
    "get_local_linear_id",
];

/// Counts over every function body of one module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct IrStats {
    /// Instructions per [`OPCODES`] entry, then `other`.
    pub ops: [u64; OPCODES.len() + 1],
    pub blocks: u64,
    /// Loops left after optimisation: branches carrying `!llvm.loop` metadata (one per latch).
    pub loops: u64,
    /// Loads and stores per [`SPACES`] entry; accesses through other address spaces (OpenCL
    /// 2.0's generic 4) are counted in `ops` only.
    pub loads: [u64; SPACES.len()],
    pub stores: [u64; SPACES.len()],
    /// Calls per [`CALL_KINDS`] entry.
    pub calls: [u64; CALL_KINDS.len()],
}

// Written out: `Default` is not derived for arrays longer than 32.
impl Default for IrStats {
    fn default() -> Self {
        IrStats {
            ops: [0; OPCODES.len() + 1],
            blocks: 0,
            loops: 0,
            loads: [0; SPACES.len()],
            stores: [0; SPACES.len()],
            calls: [0; CALL_KINDS.len()],
        }
    }
}

impl IrStats {
    pub fn total(&self) -> u64 {
        self.ops.iter().sum()
    }

    fn count(&mut self, instruction: &str) {
        let body = match instruction.split_once(" = ") {
            Some((result, rest)) if result.starts_with('%') => rest,
            _ => instruction,
        };
        let mut rest = body;
        let opcode = loop {
            let (word, after) = rest.split_once(' ').unwrap_or((rest, ""));
            rest = after;
            if !matches!(word, "tail" | "musttail" | "notail") {
                break word;
            }
        };
        let slot = OPCODES
            .iter()
            .position(|&o| o == opcode)
            .unwrap_or(OPCODES.len());
        self.ops[slot] += 1;
        if TERMINATORS.contains(&opcode) {
            self.blocks += 1;
        }
        if instruction.contains("!llvm.loop") {
            self.loops += 1;
        }
        match opcode {
            "load" | "store" => {
                if let Some(space) = second_operand(rest).and_then(address_space) {
                    let by_space = if opcode == "load" {
                        &mut self.loads
                    } else {
                        &mut self.stores
                    };
                    by_space[space] += 1;
                }
            }
            "call" => self.calls[call_kind(rest)] += 1,
            _ => {}
        }
    }
}

/// The statistics of every function defined in `ir`.
pub(super) fn parse(ir: &str) -> IrStats {
    let mut stats = IrStats::default();
    let mut in_body = false;
    // A `switch` lists its cases on the lines after it, up to the closing `]`.
    let mut open_brackets = 0i64;
    for line in ir.lines().map(str::trim) {
        if !in_body {
            in_body = line.starts_with("define ") && line.ends_with('{');
        } else if line == "}" {
            in_body = false;
        } else if open_brackets > 0 {
            open_brackets += bracket_balance(line);
        } else if !(line.is_empty() || line.starts_with(';') || is_label(line)) {
            open_brackets = bracket_balance(line);
            stats.count(line);
        }
    }
    stats
}

fn is_label(line: &str) -> bool {
    line.split_whitespace()
        .next()
        .is_some_and(|first| first.ends_with(':'))
}

fn bracket_balance(line: &str) -> i64 {
    line.chars()
        .map(|c| match c {
            '[' => 1,
            ']' => -1,
            _ => 0,
        })
        .sum()
}

/// `text` split at the commas and spaces outside brackets: IR operands and the words of a type.
fn top_level_split(text: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            c if c == separator && depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    parts.retain(|p| !p.is_empty());
    parts
}

/// The pointer operand of a `load` (`TYPE, PTRTYPE PTR, ...`) or `store` (`TYPE VAL, PTRTYPE
/// PTR, ...`): the second operand in both.
fn second_operand(operands: &str) -> Option<&str> {
    top_level_split(operands, ',').get(1).copied()
}

/// The [`SPACES`] index of the pointer in an operand such as `float addrspace(3)* %12`,
/// `float* getelementptr (...)` or `ptr addrspace(1) %5`; `None` for an unlisted space.
fn address_space(pointer: &str) -> Option<usize> {
    let words = top_level_split(pointer, ' ');
    let number = |word: &str| -> Option<usize> {
        word.strip_prefix("addrspace(")?
            .strip_suffix(')')?
            .parse()
            .ok()
    };
    let space = if words.first() == Some(&"ptr") {
        words.get(1).and_then(|w| number(w)).unwrap_or(0)
    } else {
        // A typed pointer's outermost `*` is its last; an address space written just before it
        // is the pointer's own (`float addrspace(1)**` points into private memory).
        match words.iter().rev().find(|w| w.ends_with('*')) {
            Some(w) if !w.ends_with("**") => number(w.trim_end_matches('*')).unwrap_or(0),
            _ => 0,
        }
    };
    (space < SPACES.len()).then_some(space)
}

/// The [`CALL_KINDS`] index of a call, from the text after `call`.
fn call_kind(operands: &str) -> usize {
    let other = CALL_KINDS.len() - 1;
    // The callee is the first global name outside brackets (a varargs call writes its function
    // type, in parentheses, before it); an indirect call has none there.
    let Some(callee) = top_level_split(operands, ' ')
        .into_iter()
        .find_map(|w| w.strip_prefix('@'))
    else {
        return other;
    };
    let symbol = callee.split('(').next().unwrap_or(callee);
    let name = demangled_name(symbol);
    if name.starts_with("llvm.") {
        2
    } else if WORK_ITEM_FUNCTIONS.contains(&name) {
        0
    } else if matches!(name, "barrier" | "work_group_barrier") {
        1
    } else {
        other
    }
}

/// The unqualified name in an Itanium-mangled symbol (`_Z13get_global_idj` is `get_global_id`);
/// any other symbol as it is.
fn demangled_name(symbol: &str) -> &str {
    let Some(mangled) = symbol.strip_prefix("_Z") else {
        return symbol;
    };
    let digits = mangled.len()
        - mangled
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .len();
    match mangled[..digits].parse::<usize>() {
        Ok(len) if digits + len <= mangled.len() => &mangled[digits..digits + len],
        _ => symbol,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(stats: &IrStats, name: &str) -> u64 {
        stats.ops[OPCODES.iter().position(|&o| o == name).unwrap()]
    }

    const TYPED: &str = r#"
@k.t = internal unnamed_addr addrspace(3) global [16 x float] undef, align 4

; Function Attrs: convergent norecurse nounwind
define dso_local spir_kernel void @k(float addrspace(1)* %0, float addrspace(2)* %1, i32 %2) #0 {
  %4 = alloca [4 x float], align 4
  %5 = call spir_func i64 @_Z13get_global_idj(i32 noundef 0) #5
  %6 = getelementptr inbounds float, float addrspace(1)* %0, i64 %5
  %7 = load float, float addrspace(1)* %6, align 4, !tbaa !8
  %8 = load float, float addrspace(2)* %1, align 4
  %9 = load float, float addrspace(3)* getelementptr inbounds ([16 x float], [16 x float] addrspace(3)* @k.t, i64 0, i64 3), align 4, !tbaa !8
  store float %7, float addrspace(3)* getelementptr inbounds ([16 x float], [16 x float] addrspace(3)* @k.t, i64 0, i64 1), align 4
  tail call spir_func void @_Z7barrierj(i32 noundef 1) #6
  br label %10

10:                                               ; preds = %3, %10
  %11 = phi i32 [ 0, %3 ], [ %12, %10 ]
  %12 = add nuw nsw i32 %11, 1
  %13 = icmp ult i32 %11, 3
  br i1 %13, label %10, label %14, !llvm.loop !12

14:                                               ; preds = %10
  switch i32 %2, label %16 [
    i32 1, label %15
    i32 2, label %15
  ]

15:
  %x = fmul float %7, %8
  call void @llvm.lifetime.end.p0i8(i64 16, i8* nonnull %5) #4
  %p = load float addrspace(1)*, float addrspace(1)** %q, align 8
  store float %x, float* %r, align 4
  br label %16

16:
  %y = call spir_func float @_Z4sqrtf(float %9)
  %z = call i32 (i8 addrspace(2)*, ...) @printf(i8 addrspace(2)* %s)
  ret void
}

declare spir_func i64 @_Z13get_global_idj(i32 noundef) #1
"#;

    #[test]
    fn typed_pointer_module() {
        let s = parse(TYPED);
        assert_eq!(s.total(), 22);
        assert_eq!(op(&s, "load"), 4);
        assert_eq!(op(&s, "store"), 2);
        assert_eq!(op(&s, "call"), 5);
        assert_eq!(op(&s, "br"), 3);
        assert_eq!(op(&s, "alloca"), 1);
        assert_eq!(op(&s, "fmul"), 1);
        // switch and ret.
        assert_eq!(s.ops[OPCODES.len()], 2);
        assert_eq!(s.blocks, 5);
        assert_eq!(s.loops, 1);
        // private, global, constant, local
        assert_eq!(s.loads, [1, 1, 1, 1]);
        assert_eq!(s.stores, [1, 0, 0, 1]);
        // work-item, barrier, intrinsic, other (sqrt, printf)
        assert_eq!(s.calls, [1, 1, 1, 2]);
    }

    #[test]
    fn opaque_pointers() {
        let ir = "define void @f(ptr addrspace(1) %a, ptr addrspace(3) %b) {\n\
                  %1 = load <4 x float>, ptr addrspace(1) %a, align 16\n\
                  store <4 x float> %1, ptr addrspace(3) %b, align 16\n\
                  %2 = load ptr addrspace(1), ptr %c, align 8\n\
                  %3 = load i32, ptr addrspace(4) %d, align 4\n\
                  ret void\n\
                  }\n";
        let s = parse(ir);
        assert_eq!(s.total(), 5);
        assert_eq!(s.loads, [1, 1, 0, 0]);
        assert_eq!(s.stores, [0, 0, 0, 1]);
    }

    #[test]
    fn nothing_outside_function_bodies_counts() {
        let ir = "@g = global i32 0\ndeclare void @f()\nattributes #0 = { nounwind }\n";
        assert_eq!(parse(ir), IrStats::default());
    }

    #[test]
    fn demangling() {
        assert_eq!(demangled_name("_Z13get_global_idj"), "get_global_id");
        assert_eq!(demangled_name("_Z6vload4mPU3AS1Kf"), "vload4");
        assert_eq!(demangled_name("_Z99x"), "_Z99x");
        assert_eq!(demangled_name("llvm.fmuladd.f32"), "llvm.fmuladd.f32");
    }
}
