//! Text helpers: positions in text files (for errors that name a line and a column), and
//! bytes written as hexadecimal (hashes in names and keys).

/// 1-based line and column (in characters) of a byte offset of `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// `bytes` as lower-case hexadecimal, two digits each.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_and_columns_count_from_one() {
        assert_eq!(super::line_col("ab\ncdé f", 0), (1, 1));
        assert_eq!(super::line_col("ab\ncdé f", 3), (2, 1));
        assert_eq!(super::line_col("ab\ncdé f", 7), (2, 4));
        assert_eq!(super::line_col("ab", 99), (1, 3));
    }

    #[test]
    fn hex_is_two_lower_case_digits_a_byte() {
        assert_eq!(super::hex(&[0, 10, 255]), "000aff");
    }
}
