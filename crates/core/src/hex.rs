//! Lowercase hexadecimal text of bytes: hashes as the host keeps and shows them (pins,
//! definition hashes, ids, handles).

/// `bytes` as lowercase hex, two digits a byte. Written digit by digit: formatting each
/// byte (`format!("{b:02x}")`) made a string per byte, 600 instructions a byte.
pub fn lower(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        text.push(char::from(DIGITS[usize::from(b >> 4)]));
        text.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_byte_is_its_two_digits() {
        let bytes: Vec<u8> = (0..=255).collect();
        let formatted: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(super::lower(&bytes), formatted);
        assert_eq!(super::lower(&[]), "");
    }
}
