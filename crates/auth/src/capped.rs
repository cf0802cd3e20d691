//! An HTTP answer's body read piece by piece up to a cap, for answers from servers the host
//! does not control (authorization servers, identity providers): `bytes()` buffers a chunked
//! body of any length before its size can be checked.

/// The body of `response`, or `None` when it is (or says it will be) longer than `max`.
pub async fn read_capped(
    mut response: reqwest::Response,
    max: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > max {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    /// A one-answer HTTP server on loopback whose body is `pieces` chunks of `size` bytes,
    /// chunked and without a length, as a server that streams without end sends it.
    fn chunked_server(pieces: usize, size: usize) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut head = [0u8; 4096];
            let _ = s.read(&mut head);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
            let piece = format!("{size:x}\r\n{}\r\n", "x".repeat(size));
            for _ in 0..pieces {
                if s.write_all(piece.as_bytes()).is_err() {
                    return; // the client stopped reading: the cap worked
                }
            }
            let _ = s.write_all(b"0\r\n\r\n");
        });
        url
    }

    #[tokio::test]
    async fn a_body_past_the_cap_is_refused_and_one_within_it_read() {
        crate::install_crypto_provider();
        let client = reqwest::Client::new();
        // 64 MiB would be sent; reading stops after the first MiB.
        let long = client
            .get(chunked_server(4096, 16 * 1024))
            .send()
            .await
            .unwrap();
        assert_eq!(super::read_capped(long, 1 << 20).await.unwrap(), None);
        let short = client.get(chunked_server(4, 100)).send().await.unwrap();
        let body = super::read_capped(short, 1 << 20).await.unwrap().unwrap();
        assert_eq!(body.len(), 400);
    }
}
