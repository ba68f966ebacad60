//! The report as one self-contained HTML page: inline CSS, figures as inline SVG, the figures'
//! font embedded as a `data:` URI. Nothing is fetched when it opens.

use crate::document::{Block, Document};
use crate::figures::{FAMILY, FONT};
use crate::Error;
use base64::Engine;

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escaped text with `code` spans for what is between backquotes.
fn inline(s: &str) -> String {
    escape(s)
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{part}</code>")
            } else {
                part.to_string()
            }
        })
        .collect()
}

const STYLE: &str = "
body { font-family: 'DejaVu Sans', sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; } h3 { margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
th { background: #f2f2f2; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1.2em 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #444; max-width: 900px; }
p.missing { color: #8a5a00; background: #fff8e5; padding: 0.5em 0.8em; border-left: 3px solid #e0a800; }
nav ul { columns: 2; }
code { background: #f4f4f4; padding: 0 0.2em; }
";

/// Whether a table cell reads as a number (right-aligned).
fn numeric(s: &str) -> bool {
    let t = s.trim_end_matches(['%', 'x']);
    !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || ",.-+".contains(c))
}

/// Renders the page.
pub fn render(doc: &Document) -> Result<String, Error> {
    let font = base64::engine::general_purpose::STANDARD.encode(FONT);
    let mut body = String::new();
    let mut toc = String::new();
    for block in &doc.blocks {
        match block {
            Block::Heading { level, id, text } => {
                if *level == 2 {
                    toc.push_str(&format!("<li><a href=\"#{id}\">{}</a></li>", escape(text)));
                }
                body.push_str(&format!(
                    "<h{level} id=\"{id}\">{}</h{level}>\n",
                    escape(text)
                ));
            }
            Block::Paragraph(t) => body.push_str(&format!("<p>{}</p>\n", inline(t))),
            Block::Missing(t) => {
                body.push_str(&format!("<p class=\"missing\">{}</p>\n", inline(t)))
            }
            Block::Table { head, rows } => {
                body.push_str("<table>\n<tr>");
                for h in head {
                    body.push_str(&format!("<th>{}</th>", escape(h)));
                }
                body.push_str("</tr>\n");
                for row in rows {
                    body.push_str("<tr>");
                    for cell in row {
                        let class = if numeric(cell) { " class=\"n\"" } else { "" };
                        body.push_str(&format!("<td{class}>{}</td>", escape(cell)));
                    }
                    body.push_str("</tr>\n");
                }
                body.push_str("</table>\n");
            }
            Block::Figure {
                id,
                figure,
                alt,
                caption,
            } => {
                let svg = figure.svg().map_err(|detail| Error::Draw {
                    figure: figure.title().to_string(),
                    detail,
                })?;
                // Inline SVG needs no namespace in HTML; without it the page names no URL at all.
                // The alt text is the drawing's accessible name.
                let svg = svg.replacen(
                    " xmlns=\"http://www.w3.org/2000/svg\"",
                    &format!(" role=\"img\" aria-label=\"{}\"", escape(alt)),
                    1,
                );
                body.push_str(&format!(
                    "<figure id=\"{id}\" class=\"figure\">\n{svg}\n<figcaption>{}</figcaption>\n</figure>\n",
                    inline(caption)
                ));
            }
        }
    }
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n\
         <style>\n@font-face {{ font-family: '{FAMILY}'; src: url(data:font/ttf;base64,{font}) format('truetype'); }}\n{STYLE}</style>\n\
         </head>\n<body>\n<h1>{title}</h1>\n<nav><ul>{toc}</ul></nav>\n{body}</body>\n</html>\n",
        title = escape(&doc.title)
    ))
}
