//! `ndtune stencil`: the reference stencils and the synthetic stencil generator.

use crate::cli::StencilCommand;
use anyhow::{Context, Result};

pub fn run(cmd: &StencilCommand) -> Result<()> {
    match cmd {
        StencilCommand::List => {
            for name in ndtune_stencil::reference_names() {
                let s = ndtune_stencil::reference(&name).expect("listed names exist");
                let b = &s.border;
                println!(
                    "{name:<12} border N{} S{} E{} W{}  {} -> {}",
                    b.north,
                    b.south,
                    b.east,
                    b.west,
                    s.input.c_name(),
                    s.output.c_name()
                );
            }
            Ok(())
        }
        StencilCommand::Gen { seed, count, out } => {
            std::fs::create_dir_all(out)
                .with_context(|| format!("cannot create {}", out.display()))?;
            for s in ndtune_stencil::generate(*seed, *count) {
                let path = out.join(format!("{}.stencil.toml", s.name));
                std::fs::write(&path, s.to_toml())
                    .with_context(|| format!("cannot write {}", path.display()))?;
                let cl = out.join(format!("{}.cl", s.name));
                std::fs::write(&cl, s.device_source())
                    .with_context(|| format!("cannot write {}", cl.display()))?;
                println!("{}", path.display());
            }
            Ok(())
        }
    }
}
