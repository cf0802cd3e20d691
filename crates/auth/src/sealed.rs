//! Credentials sealed at rest with a service key (AES-256-GCM), for the hosted mode: every
//! user's tokens sit in files on the service's disk, and a copy of the disk (a backup, a
//! stolen volume) must not be a copy of the tokens. Each file is bound to what it is for by
//! the authenticated data (the vault's context, e.g. the user, and the credential's key), so
//! a file moved to another user's or another server's place does not open.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

/// The key credentials are sealed with: 32 bytes, from a file or the environment, given to
/// every replica alike.
pub struct SealingKey {
    key: LessSafeKey,
}

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealingKey(..)")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("a sealing key is 32 bytes, written as base64 (it was {0} bytes)")]
    BadKey(usize),
    #[error("the sealing key is not base64")]
    NotBase64,
    #[error("sealing failed")]
    Seal,
    #[error(
        "the sealed credential does not open with this key (another key, or moved from elsewhere)"
    )]
    Open,
}

impl SealingKey {
    /// A key from its base64 text (standard alphabet, surrounding whitespace ignored).
    pub fn from_base64(text: &str) -> Result<Self, SealError> {
        let bytes = STANDARD
            .decode(text.trim())
            .map_err(|_| SealError::NotBase64)?;
        if bytes.len() != 32 {
            return Err(SealError::BadKey(bytes.len()));
        }
        let key =
            UnboundKey::new(&AES_256_GCM, &bytes).map_err(|_| SealError::BadKey(bytes.len()))?;
        Ok(Self {
            key: LessSafeKey::new(key),
        })
    }

    /// A new random key as base64 text.
    pub fn generate() -> Result<String, SealError> {
        let mut bytes = [0u8; 32];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| SealError::Seal)?;
        Ok(STANDARD.encode(bytes))
    }

    /// `plain` sealed for `aad`: base64 of nonce ‖ ciphertext ‖ tag.
    pub fn seal(&self, plain: &[u8], aad: &str) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| SealError::Seal)?;
        let mut data = plain.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut data,
            )
            .map_err(|_| SealError::Seal)?;
        Ok(STANDARD.encode([&nonce[..], &data].concat()))
    }

    /// What [`SealingKey::seal`] sealed for the same `aad`.
    pub fn open(&self, sealed: &str, aad: &str) -> Result<Vec<u8>, SealError> {
        let bytes = STANDARD
            .decode(sealed.trim())
            .map_err(|_| SealError::Open)?;
        if bytes.len() < NONCE_LEN {
            return Err(SealError::Open);
        }
        let (nonce, data) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SealError::Open)?;
        let mut data = data.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(aad), &mut data)
            .map_err(|_| SealError::Open)?;
        Ok(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_with_its_key_and_its_place() {
        let key = SealingKey::from_base64(&SealingKey::generate().unwrap()).unwrap();
        let sealed = key.seal(b"refresh-token", "user-a\nserver-1").unwrap();
        assert!(!sealed.contains("refresh"));
        assert_eq!(
            key.open(&sealed, "user-a\nserver-1").unwrap(),
            b"refresh-token"
        );
        assert!(
            key.open(&sealed, "user-b\nserver-1").is_err(),
            "moved to another user"
        );
        let other = SealingKey::from_base64(&SealingKey::generate().unwrap()).unwrap();
        assert!(
            other.open(&sealed, "user-a\nserver-1").is_err(),
            "another key"
        );
        assert!(SealingKey::from_base64("c2hvcnQ=").is_err(), "too short");
    }
}
