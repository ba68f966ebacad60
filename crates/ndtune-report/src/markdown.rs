//! The report as Markdown, each figure a PNG file beside it (`STEM-fig-N.png`).

use crate::document::{Block, Document};
use crate::Error;
use std::path::{Path, PathBuf};

/// Escapes a table cell (pipes) and keeps it on one line.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Renders the Markdown text and writes the figures' PNG files next to `out`; returns the text
/// and the PNG files written.
pub fn render(doc: &Document, out: &Path) -> Result<(String, Vec<PathBuf>), Error> {
    let dir = out.parent().unwrap_or(Path::new(""));
    let stem = out
        .file_stem()
        .map_or("report".into(), |s| s.to_string_lossy().into_owned());
    let mut md = format!("# {}\n\n", doc.title);
    let mut pngs = Vec::new();
    for block in &doc.blocks {
        match block {
            Block::Heading { level, text, .. } => {
                md.push_str(&format!("{} {text}\n\n", "#".repeat(*level as usize)));
            }
            Block::Paragraph(t) => md.push_str(&format!("{t}\n\n")),
            Block::Missing(t) => md.push_str(&format!("> {t}\n\n")),
            Block::Table { head, rows } => {
                let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
                md.push_str(&line(head.iter().map(|h| cell(h)).collect()));
                md.push_str(&line(head.iter().map(|_| "---".to_string()).collect()));
                for row in rows {
                    md.push_str(&line(row.iter().map(|c| cell(c)).collect()));
                }
                md.push('\n');
            }
            Block::Figure {
                id,
                figure,
                alt,
                caption,
            } => {
                let name = format!("{stem}-{id}.png");
                let path = dir.join(&name);
                figure.png(&path).map_err(|detail| Error::Draw {
                    figure: figure.title().to_string(),
                    detail: format!("{}: {detail}", path.display()),
                })?;
                md.push_str(&format!(
                    "![{}]({name})\n\n*{caption}*\n\n",
                    cell(alt).replace(['[', ']'], "")
                ));
                pngs.push(path);
            }
        }
    }
    Ok((md, pngs))
}
