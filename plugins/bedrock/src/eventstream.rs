//! The `application/vnd.amazon.eventstream` binary framing, decoded incrementally from bytes
//! split anywhere, both CRCs checked.
//!
//! A message is a prelude (total length and headers length, big-endian `u32`s), the prelude's
//! CRC32, the headers, the payload, and the CRC32 of everything before it. A header is a name
//! (`u8` length, UTF-8), a value type (`u8`) and a value whose size the type decides.

use wasmgate_plugin_sdk::PluginError;

/// Prelude (8) + prelude CRC (4) + message CRC (4).
const OVERHEAD: usize = 16;
const PRELUDE: usize = 12;
/// The event stream format caps a message at 16 MiB; a larger length means a corrupt prelude.
const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// One decoded message: its string-valued headers (others are skipped) and its payload.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
}

impl Message {
    /// The value of string header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Collects bytes and returns each message once all its bytes have come.
#[derive(Debug, Default)]
pub struct Decoder {
    buffer: Vec<u8>,
    /// Corrupt bytes were met: every later call fails with this.
    error: Option<PluginError>,
}

fn corrupt(what: &str) -> PluginError {
    PluginError::upstream(format!("Bedrock's event stream is corrupt: {what}"))
}

fn be_u32(bytes: &[u8]) -> u32 {
    let mut word = [0; 4];
    word.copy_from_slice(&bytes[..4]);
    u32::from_be_bytes(word)
}

/// The first message of `bytes` and its length, if all of it is there.
fn next_message(bytes: &[u8]) -> Result<Option<(Message, usize)>, PluginError> {
    if bytes.len() < PRELUDE {
        return Ok(None);
    }
    let total = be_u32(bytes) as usize;
    let headers_len = be_u32(&bytes[4..]) as usize;
    if crc32fast::hash(&bytes[..8]) != be_u32(&bytes[8..]) {
        return Err(corrupt("prelude checksum mismatch"));
    }
    if !(OVERHEAD..=MAX_MESSAGE).contains(&total) || headers_len > total - OVERHEAD {
        return Err(corrupt("impossible message length"));
    }
    if bytes.len() < total {
        return Ok(None);
    }
    let body = &bytes[..total - 4];
    if crc32fast::hash(body) != be_u32(&bytes[total - 4..]) {
        return Err(corrupt("message checksum mismatch"));
    }
    let headers = parse_headers(&body[PRELUDE..PRELUDE + headers_len])?;
    let payload = body[PRELUDE + headers_len..].to_vec();
    Ok(Some((Message { headers, payload }, total)))
}

impl Decoder {
    /// Takes the next bytes and returns the messages they complete. Corrupt bytes fail the call,
    /// or, when messages came before them in the same bytes, the next call, so that those
    /// messages are still delivered.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Message>, PluginError> {
        if let Some(err) = &self.error {
            return Err(err.clone());
        }
        self.buffer.extend_from_slice(bytes);
        let mut messages = Vec::new();
        let mut start = 0;
        loop {
            match next_message(&self.buffer[start..]) {
                Ok(Some((message, len))) => {
                    messages.push(message);
                    start += len;
                }
                Ok(None) => break,
                Err(err) => {
                    self.error = Some(err.clone());
                    self.buffer.clear();
                    if messages.is_empty() {
                        return Err(err);
                    }
                    return Ok(messages);
                }
            }
        }
        self.buffer.drain(..start);
        Ok(messages)
    }

    /// Whether bytes of an incomplete message are left over.
    pub fn has_partial(&self) -> bool {
        !self.buffer.is_empty()
    }
}

/// Reads the header block, keeping string values (type 7) and skipping the rest.
fn parse_headers(mut bytes: &[u8]) -> Result<Vec<(String, String)>, PluginError> {
    let bad = || corrupt("malformed headers");
    let take = |bytes: &mut &[u8], n: usize| -> Result<Vec<u8>, PluginError> {
        if bytes.len() < n {
            return Err(bad());
        }
        let (head, tail) = bytes.split_at(n);
        *bytes = tail;
        Ok(head.to_vec())
    };
    let mut headers = Vec::new();
    while !bytes.is_empty() {
        let name_len = take(&mut bytes, 1)?[0] as usize;
        let name = String::from_utf8(take(&mut bytes, name_len)?).map_err(|_| bad())?;
        let value_type = take(&mut bytes, 1)?[0];
        let fixed = match value_type {
            0 | 1 => Some(0), // bool true / false
            2 => Some(1),     // byte
            3 => Some(2),     // short
            4 => Some(4),     // integer
            5 | 8 => Some(8), // long, timestamp
            9 => Some(16),    // uuid
            6 | 7 => None,    // byte array, string: u16 length
            _ => return Err(bad()),
        };
        match fixed {
            Some(n) => {
                take(&mut bytes, n)?;
            }
            None => {
                let len = take(&mut bytes, 2)?;
                let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
                let value = take(&mut bytes, len)?;
                if value_type == 7 {
                    headers.push((name, String::from_utf8(value).map_err(|_| bad())?));
                }
            }
        }
    }
    Ok(headers)
}

/// Encodes a message with string headers: for tests and fixtures.
#[cfg(test)]
pub fn encode(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in headers {
        block.push(name.len() as u8);
        block.extend_from_slice(name.as_bytes());
        block.push(7);
        block.extend_from_slice(&(value.len() as u16).to_be_bytes());
        block.extend_from_slice(value.as_bytes());
    }
    let total = (OVERHEAD + block.len() + payload.len()) as u32;
    let mut out = Vec::new();
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&(block.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out.extend_from_slice(&block);
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented check value of CRC-32 (IEEE), so that the crate is the CRC the format uses.
    #[test]
    fn crc32_is_ieee() {
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn decodes_across_every_split() {
        let mut stream = encode(&[(":event-type", "a"), (":message-type", "event")], b"{}");
        stream.extend(encode(&[(":event-type", "b")], b"{\"x\":1}"));
        for split in 0..=stream.len() {
            let mut decoder = Decoder::default();
            let mut messages = decoder.push(&stream[..split]).unwrap();
            messages.extend(decoder.push(&stream[split..]).unwrap());
            assert_eq!(messages.len(), 2, "split at {split}");
            assert_eq!(messages[0].header(":event-type"), Some("a"));
            assert_eq!(messages[1].payload, b"{\"x\":1}");
            assert!(!decoder.has_partial());
        }
    }

    #[test]
    fn skips_non_string_headers() {
        // A message with an int32 header (type 4) before a string header.
        let mut block = vec![3];
        block.extend_from_slice(b"num");
        block.extend_from_slice(&[4, 0, 0, 0, 7]);
        block.push(1);
        block.extend_from_slice(b"s");
        block.extend_from_slice(&[7, 0, 1, b'v']);
        let total = (OVERHEAD + block.len()) as u32;
        let mut msg = total.to_be_bytes().to_vec();
        msg.extend_from_slice(&(block.len() as u32).to_be_bytes());
        msg.extend_from_slice(&crc32fast::hash(&msg).to_be_bytes());
        msg.extend_from_slice(&block);
        msg.extend_from_slice(&crc32fast::hash(&msg).to_be_bytes());
        let messages = Decoder::default().push(&msg).unwrap();
        assert_eq!(messages[0].headers, [("s".to_owned(), "v".to_owned())]);
    }

    #[test]
    fn rejects_bad_checksums_and_lengths() {
        let good = encode(&[(":event-type", "a")], b"{}");
        let mut bad_payload = good.clone();
        let at = bad_payload.len() - 5;
        bad_payload[at] ^= 1;
        let err = Decoder::default().push(&bad_payload).unwrap_err();
        assert!(err.message.contains("message checksum"), "{}", err.message);

        let mut bad_prelude = good.clone();
        bad_prelude[3] ^= 1;
        let err = Decoder::default().push(&bad_prelude[..12]).unwrap_err();
        assert!(err.message.contains("prelude checksum"), "{}", err.message);

        // A prelude with a valid CRC but a total length below the overhead.
        let mut tiny = 8u32.to_be_bytes().to_vec();
        tiny.extend_from_slice(&0u32.to_be_bytes());
        tiny.extend_from_slice(&crc32fast::hash(&tiny).to_be_bytes());
        let err = Decoder::default().push(&tiny).unwrap_err();
        assert!(err.message.contains("length"), "{}", err.message);
    }
}
