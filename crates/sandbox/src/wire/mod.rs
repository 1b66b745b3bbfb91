//! The agent protocol: a compact binary frame carrying an optional JSON header
//! and raw bytes, and the messages inside it. Transport-agnostic: the local
//! backend speaks it over a Unix socket pair; a remote backend (a pod, a VM)
//! can speak it over TCP unchanged.
//!
//! A frame is `len: u32 BE` (bytes that follow) · `kind: u8` · `id: u32 BE` ·
//! `meta_len: u32 BE` · `meta` (JSON, may be empty) · `data` (raw bytes).
//! `id` names a request and, for a process, every frame about that process
//! (its reply, output chunks, stdin, acks and exit), so several commands
//! stream over one connection at once.

mod messages;

pub use messages::*;

use crate::error::{Error, Result};

/// Largest frame either side accepts (a file transfer plus headroom).
pub const MAX_FRAME: usize = 80 << 20;
const HEADER: usize = 4 + 1 + 4 + 4;

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Agent → host, first frame: [`Hello`] (the agent is ready).
    Hello = 1,
    /// Host → agent, local backend only, first frame: [`InitConfig`].
    Init = 2,
    /// Host → agent: a [`Request`] (data: file content for writes).
    Request = 3,
    /// Agent → host: the [`Reply`] to the request with the same id.
    Reply = 4,
    /// Host → agent: bytes for a process's stdin.
    Stdin = 5,
    /// Host → agent: close a process's stdin.
    StdinEof = 6,
    /// Agent → host: a chunk of a process's stdout.
    Stdout = 7,
    /// Agent → host: a chunk of a process's stderr.
    Stderr = 8,
    /// Agent → host: the process exited ([`Exited`]); no more frames for it.
    Exited = 9,
    /// Host → agent: `data` is a u64 BE count of output bytes consumed, which
    /// reopens the process's flow-control window.
    Ack = 10,
    /// Agent → host: setup failed ([`Fatal`]); the agent exits.
    Fatal = 11,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Hello,
            2 => Kind::Init,
            3 => Kind::Request,
            4 => Kind::Reply,
            5 => Kind::Stdin,
            6 => Kind::StdinEof,
            7 => Kind::Stdout,
            8 => Kind::Stderr,
            9 => Kind::Exited,
            10 => Kind::Ack,
            11 => Kind::Fatal,
            _ => return None,
        })
    }
}

/// One protocol frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: Kind,
    pub id: u32,
    pub meta: Vec<u8>,
    pub data: Vec<u8>,
}

impl Frame {
    /// A frame with raw data and no header.
    pub fn data(kind: Kind, id: u32, data: Vec<u8>) -> Frame {
        Frame { kind, id, meta: Vec::new(), data }
    }

    /// A frame whose header is `meta` serialized as JSON.
    pub fn json<T: serde::Serialize>(kind: Kind, id: u32, meta: &T, data: Vec<u8>) -> Result<Frame> {
        let meta = serde_json::to_vec(meta).map_err(|e| Error::Protocol(format!("encode: {e}")))?;
        Ok(Frame { kind, id, meta, data })
    }

    /// Parses the JSON header.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_slice(&self.meta).map_err(|e| Error::Protocol(format!("bad {:?} frame: {e}", self.kind)))
    }

    /// Appends the encoded frame to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let len = 1 + 4 + 4 + self.meta.len() + self.data.len();
        out.reserve(4 + len);
        out.extend_from_slice(&(len as u32).to_be_bytes());
        out.push(self.kind as u8);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&(self.meta.len() as u32).to_be_bytes());
        out.extend_from_slice(&self.meta);
        out.extend_from_slice(&self.data);
    }

    /// The encoded frame.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Decodes one frame from the front of `buf`: `Ok(None)` if more bytes
    /// are needed, otherwise the frame and how many bytes it used.
    pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>> {
        let Some(len) = frame_len(buf)? else { return Ok(None) };
        if buf.len() < 4 + len {
            return Ok(None);
        }
        let kind = Kind::from_u8(buf[4]).ok_or_else(|| Error::Protocol(format!("unknown frame kind {}", buf[4])))?;
        let id = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]);
        let meta_len = u32::from_be_bytes([buf[9], buf[10], buf[11], buf[12]]) as usize;
        if HEADER + meta_len > 4 + len {
            return Err(Error::Protocol("frame header longer than the frame".into()));
        }
        let meta = buf[HEADER..HEADER + meta_len].to_vec();
        let data = buf[HEADER + meta_len..4 + len].to_vec();
        Ok(Some((Frame { kind, id, meta, data }, 4 + len)))
    }
}

/// The length prefix of the frame at the front of `buf`, once it is there.
fn frame_len(buf: &[u8]) -> Result<Option<usize>> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if !(HEADER - 4..=MAX_FRAME).contains(&len) {
        return Err(Error::Protocol(format!("frame length {len} out of range")));
    }
    Ok(Some(len))
}

/// Reads one frame from an async stream; `Ok(None)` on a clean end of stream.
pub async fn read_frame<R: tokio::io::AsyncRead + Unpin>(r: &mut R) -> Result<Option<Frame>> {
    use tokio::io::AsyncReadExt;
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(Error::io("read from the sandbox agent", e)),
    }
    let Some(n) = frame_len(&len)? else { return Ok(None) };
    let mut buf = vec![0u8; 4 + n];
    buf[..4].copy_from_slice(&len);
    r.read_exact(&mut buf[4..]).await.map_err(|e| Error::io("read from the sandbox agent", e))?;
    match Frame::decode(&buf)? {
        Some((frame, _)) => Ok(Some(frame)),
        None => Err(Error::Protocol("short frame".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_split_anywhere() {
        let a = Frame::json(Kind::Request, 7, &Request::ListDir { path: "/workspace".into() }, vec![]).unwrap();
        let b = Frame::data(Kind::Stdout, 9, b"hello".to_vec());
        let mut bytes = a.encode();
        b.encode_into(&mut bytes);
        for cut in 0..bytes.len() {
            let first = Frame::decode(&bytes[..cut]).unwrap();
            assert!(first.is_none() || cut >= a.encode().len());
        }
        let (got_a, used) = Frame::decode(&bytes).unwrap().unwrap();
        assert_eq!(got_a, a);
        let (got_b, _) = Frame::decode(&bytes[used..]).unwrap().unwrap();
        assert_eq!(got_b, b);
        assert_eq!(got_a.parse::<Request>().unwrap(), Request::ListDir { path: "/workspace".into() });
    }

    #[test]
    fn oversized_and_unknown_frames_are_protocol_errors() {
        let mut bytes = ((MAX_FRAME + 1) as u32).to_be_bytes().to_vec();
        bytes.extend_from_slice(&[3, 0, 0, 0, 0]);
        assert!(matches!(Frame::decode(&bytes), Err(Error::Protocol(_))));
        let mut bad = Frame::data(Kind::Stdout, 1, vec![]).encode();
        bad[4] = 200;
        assert!(matches!(Frame::decode(&bad), Err(Error::Protocol(_))));
    }
}
