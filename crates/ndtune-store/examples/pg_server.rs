//! A throwaway PostgreSQL server for benchmarks on a machine that has the server binaries but
//! no server (the GPU machine, with Debian's packages unpacked; see bench/scale.sh): starts
//! [`ndtune_store::testing::PgServer`] from the binaries in `NDTUNE_PG_BIN`, creates the
//! databases named on the command line, prints one URL per line, and stops the server (removing
//! its files) when its standard input closes.
//!
//! ```sh
//! NDTUNE_PG_BIN=/opt/pg/usr/lib/postgresql/15/bin pg_server scale1 scale2 < fifo
//! ```

use ndtune_store::testing::PgServer;
use std::io::{Read, Write};

fn main() {
    let Some(server) = PgServer::shared() else {
        std::process::exit(2);
    };
    for name in std::env::args().skip(1) {
        let url = server
            .create_database(&name)
            .unwrap_or_else(|e| panic!("cannot create database {name}: {e}"));
        println!("{url}");
    }
    std::io::stdout().flush().unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
