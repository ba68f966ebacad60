//! Text helpers: positions in text files (for errors that name a line and a column),
//! configurations and constants as reports show them, and bytes written as hexadecimal and short
//! SHA-256 ids (hashes in names and keys); BLAKE3 ids of data files, which may be large (several
//! times SHA-256's speed).

use crate::{Config, Constants};

/// 1-based line and column (in characters) of a byte offset of `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// 1-based line and column (in bytes) of a byte offset of `bytes`, text or not.
pub fn byte_line_col(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = before.len()
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    (line, column)
}

/// Whether `name` is an identifier of C and of ndtune's expressions: a letter or `_`, then
/// letters, digits and `_`.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `A=1 B=2` in the order of `names` (a spec's parameter order); `?` for a name it lacks.
pub fn show_config(names: &[String], config: &Config) -> String {
    names
        .iter()
        .map(|n| {
            format!(
                "{n}={}",
                config.get(n).map_or("?".into(), ToString::to_string)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// ` N=128 K=3` (with a leading space), or nothing where there are no constants.
pub fn show_constants(constants: &Constants) -> String {
    constants.iter().map(|(k, v)| format!(" {k}={v}")).collect()
}

/// `bytes` as lower-case hexadecimal, two digits each.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A 16-hex-digit id of `bytes`: the first 8 bytes of their SHA-256.
pub fn short_sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes)[..8])
}

/// [`short_sha256`] of a regular file's content, read in pieces (data files may be large; a
/// FIFO or a device, which may never end, is refused).
pub fn short_sha256_file(path: &std::path::Path) -> std::io::Result<String> {
    Ok(hex(&sha256_file(path)?[..8]))
}

/// The whole SHA-256 of a regular file's content, as [`short_sha256_file`] reads it.
pub fn sha256_file(path: &std::path::Path) -> std::io::Result<[u8; 32]> {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    std::io::copy(&mut crate::input::open_regular(path, "file")?, &mut hasher)?;
    Ok(hasher.finalize().into())
}

/// The BLAKE3 of `parts`, one after another, as 64 hex digits: inputs of a megabyte or more
/// are hashed on every core (a 3 GB array in a fraction of a second, where SHA-256 on one core
/// takes seconds).
pub fn blake3_hex(parts: &[&[u8]]) -> String {
    let mut hasher = blake3::Hasher::new();
    for part in parts {
        if part.len() >= 1 << 20 {
            hasher.update_rayon(part);
        } else {
            hasher.update(part);
        }
    }
    hasher.finalize().to_hex().to_string()
}

/// A 16-hex-digit id of a regular file's content, the first 8 bytes of its BLAKE3, for data
/// files of any size: a few GB/s where SHA-256 reads one. Kept by the file's identity and state
/// (device, inode, length, modification and change times, which any write moves) for the life
/// of the process, and in the cache folder `digests` for the processes after it: a campaign
/// digests its setup in the front end and in each worker process (16 on a GPU host), and an
/// unchanged file is read once, not once a process.
pub fn short_blake3_file(path: &std::path::Path) -> std::io::Result<String> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static KNOWN: Mutex<Option<HashMap<FileState, String>>> = Mutex::new(None);
    let remember = |state: FileState, id: &str| {
        KNOWN
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert(state, id.to_string());
    };
    let started = std::time::SystemTime::now();
    let state = file_state(path)?;
    if let Some(known) = KNOWN.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        if let Some(id) = known.get(&state) {
            return Ok(id.clone());
        }
    }
    let kept = crate::cache::folder("digests").ok().flatten();
    if let Some(id) = kept.as_deref().and_then(|dir| kept_digest(dir, &state)) {
        remember(state, &id);
        return Ok(id);
    }
    // A regular file only (a FIFO or a device may never end), read through a map on every
    // core: the 3 GB input of a reduction in a fraction of a second.
    drop(crate::input::open_regular(path, "file")?);
    let mut hasher = blake3::Hasher::new();
    hasher.update_mmap_rayon(path)?;
    let id = hex(&hasher.finalize().as_bytes()[..8]);
    // File times come from a coarse clock (a tick behind at most): a write after this digest
    // has a change time past `started` less a tick, so a file last changed well before it is
    // told apart from any later state of it. One changed since, or just before, is not kept.
    let settled = state.changed_at() + FILE_CLOCK_TICK < started;
    if settled && file_state(path)? == state {
        if let Some(dir) = &kept {
            keep_digest(dir, &state, &id);
        }
        remember(state, &id);
    }
    Ok(id)
}

/// The file in the private folder `dir` that holds the digest of a file in `state`: named by
/// the digest of the state, so that any change of the file names another.
fn digest_entry(dir: &std::path::Path, state: &FileState) -> std::path::PathBuf {
    dir.join(short_sha256(format!("{state:?}").as_bytes()))
}

/// The digest kept in `dir` for a file in `state`, where one is.
fn kept_digest(dir: &std::path::Path, state: &FileState) -> Option<String> {
    let id = std::fs::read_to_string(digest_entry(dir, state)).ok()?;
    (id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// Keeps `id` in `dir` for a file in `state` (whole or not at all: written aside, then renamed);
/// a folder that cannot take it only means the next process reads the file again.
fn keep_digest(dir: &std::path::Path, state: &FileState, id: &str) {
    let entry = digest_entry(dir, state);
    let aside = entry.with_extension(format!("{}.tmp", std::process::id()));
    if std::fs::write(&aside, id).is_ok() && std::fs::rename(&aside, &entry).is_err() {
        let _ = std::fs::remove_file(&aside);
    }
}

/// What identifies a file's content without reading it: its path, device, inode, length and
/// modification and change times (nanoseconds).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FileState {
    path: std::path::PathBuf,
    dev: u64,
    ino: u64,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

/// More than the coarse clock's tick that file times are read from (1-10 ms).
const FILE_CLOCK_TICK: std::time::Duration = std::time::Duration::from_millis(50);

impl FileState {
    fn changed_at(&self) -> std::time::SystemTime {
        let (s, ns) = self.changed;
        let since = std::time::Duration::new(s.max(0) as u64, ns.clamp(0, 999_999_999) as u32);
        std::time::UNIX_EPOCH + since
    }
}

fn file_state(path: &std::path::Path) -> std::io::Result<FileState> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok(FileState {
        path: path.to_path_buf(),
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        modified: (m.mtime(), m.mtime_nsec()),
        changed: (m.ctime(), m.ctime_nsec()),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_data_file_digest_kept_for_later_processes_is_read_for_that_state_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data.bin");
        std::fs::write(&file, b"abc").unwrap();
        let state = super::file_state(&file).unwrap();
        assert_eq!(super::kept_digest(dir.path(), &state), None);
        super::keep_digest(dir.path(), &state, "6437b3ac38465133");
        assert_eq!(
            super::kept_digest(dir.path(), &state).as_deref(),
            Some("6437b3ac38465133")
        );
        // Written again, the file is in another state: nothing is kept for it.
        std::fs::write(&file, b"abcd").unwrap();
        let changed = super::file_state(&file).unwrap();
        assert_ne!(changed, state);
        assert_eq!(super::kept_digest(dir.path(), &changed), None);
        // What is not a digest is not taken for one.
        std::fs::write(
            super::digest_entry(dir.path(), &changed),
            "not a digest!!!!",
        )
        .unwrap();
        assert_eq!(super::kept_digest(dir.path(), &changed), None);
    }

    #[test]
    fn a_data_file_id_is_the_start_of_its_blake3() {
        let file = std::env::temp_dir().join(format!("ndtune-blake3-{}", std::process::id()));
        std::fs::write(&file, b"abc").unwrap();
        let id = super::short_blake3_file(&file).unwrap();
        // BLAKE3("abc") from the reference implementation's test vectors.
        assert_eq!(id, "6437b3ac38465133");
        // Written again at once (the same length, maybe the same file times): read again.
        std::fs::write(&file, b"abd").unwrap();
        let other = super::short_blake3_file(&file).unwrap();
        assert_ne!(other, id);
        // Kept once settled; written again, read again.
        std::thread::sleep(std::time::Duration::from_millis(120));
        assert_eq!(super::short_blake3_file(&file).unwrap(), other);
        assert_eq!(super::short_blake3_file(&file).unwrap(), other);
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(super::short_blake3_file(&file).unwrap(), id);
        // A file of megabytes, hashed on every core, has the digest its bytes have in one piece.
        let big: Vec<u8> = (0..3u32 << 20).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&file, &big).unwrap();
        let whole = super::blake3_hex(&[&big]);
        assert_eq!(super::short_blake3_file(&file).unwrap(), whole[..16]);
        std::fs::remove_file(&file).unwrap();
    }

    #[test]
    fn a_content_digest_is_the_blake3_of_its_parts_one_after_another() {
        // BLAKE3("abc") from the reference implementation's test vectors, in any split.
        let abc = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85";
        assert_eq!(super::blake3_hex(&[b"abc"]), abc);
        assert_eq!(super::blake3_hex(&[b"a", b"", b"bc"]), abc);
        // Parts of a megabyte or more are hashed on every core: the same digest.
        let big: Vec<u8> = (0..5u32 << 20).map(|i| (i % 253) as u8).collect();
        let (head, tail) = big.split_at(1234);
        assert_eq!(
            super::blake3_hex(&[head, tail]),
            blake3::hash(&big).to_hex().as_str()
        );
    }

    #[test]
    fn identifiers_and_byte_positions() {
        assert!(super::is_identifier("_a1") && super::is_identifier("N"));
        assert!(
            !super::is_identifier("1a")
                && !super::is_identifier("")
                && !super::is_identifier("a-b")
        );
        assert_eq!(super::byte_line_col(b"ab\ncd\xff", 5), (2, 3));
    }

    #[test]
    fn lines_and_columns_count_from_one() {
        assert_eq!(super::line_col("ab\ncdé f", 0), (1, 1));
        assert_eq!(super::line_col("ab\ncdé f", 3), (2, 1));
        assert_eq!(super::line_col("ab\ncdé f", 7), (2, 4));
        assert_eq!(super::line_col("ab", 99), (1, 3));
    }

    #[test]
    fn short_sha256_is_the_start_of_sha256() {
        // SHA-256("abc") = ba7816bf8f01cfea414140de5dae2223...
        assert_eq!(super::short_sha256(b"abc"), "ba7816bf8f01cfea");
    }

    #[test]
    fn hex_is_two_lower_case_digits_a_byte() {
        assert_eq!(super::hex(&[0, 10, 255]), "000aff");
    }
}
