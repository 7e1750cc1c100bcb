//! The wire format: requests and responses are 16 bytes, a request id and a value, big-endian.

use tokio::io::AsyncReadExt;
use tokio::net::tcp::OwnedReadHalf;

pub(super) const FRAME: usize = 16;

pub(super) fn encode(id: u64, value: u64) -> [u8; FRAME] {
    let mut frame = [0; FRAME];
    frame[..8].copy_from_slice(&id.to_be_bytes());
    frame[8..].copy_from_slice(&value.to_be_bytes());
    frame
}

pub(super) fn decode(frame: &[u8; FRAME]) -> (u64, u64) {
    let mut id = [0; 8];
    let mut value = [0; 8];
    id.copy_from_slice(&frame[..8]);
    value.copy_from_slice(&frame[8..]);
    (u64::from_be_bytes(id), u64::from_be_bytes(value))
}

/// What the server computes for a request's value.
pub(super) fn answer(value: u64) -> u64 {
    value.rotate_left(17) ^ 0x0005_DEEC_E66D
}

/// Reads one frame; `None` at a clean end of stream.
pub(super) async fn read_frame(
    reader: &mut OwnedReadHalf,
) -> Result<Option<[u8; FRAME]>, std::io::Error> {
    let mut frame = [0; FRAME];
    match reader.read_exact(&mut frame).await {
        Ok(_) => Ok(Some(frame)),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}
