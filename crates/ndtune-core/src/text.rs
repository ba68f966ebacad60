//! Text helpers: positions in text files (for errors that name a line and a column), and
//! bytes written as hexadecimal and short SHA-256 ids (hashes in names and keys); BLAKE3 ids of
//! data files, which may be large (several times SHA-256's speed).

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

/// A 16-hex-digit id of a regular file's content, the first 8 bytes of its BLAKE3, for data
/// files of any size: a few GB/s where SHA-256 reads one.
pub fn short_blake3_file(path: &std::path::Path) -> std::io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    std::io::copy(&mut crate::input::open_regular(path, "file")?, &mut hasher)?;
    Ok(hex(&hasher.finalize().as_bytes()[..8]))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_data_file_id_is_the_start_of_its_blake3() {
        let file = std::env::temp_dir().join(format!("ndtune-blake3-{}", std::process::id()));
        std::fs::write(&file, b"abc").unwrap();
        let id = super::short_blake3_file(&file).unwrap();
        std::fs::remove_file(&file).unwrap();
        // BLAKE3("abc") from the reference implementation's test vectors.
        assert_eq!(id, "6437b3ac38465133");
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
