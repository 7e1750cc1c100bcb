//! The `grpc-timeout` header as a server reads it and a client writes it.
//!
//! The gRPC spec gives its grammar (1 to 8 ASCII digits, then `H`, `M`, `S`, `m`, `u` or `n`)
//! but not what a server does with one that breaks it; see `DeadlineLayer` for the answers.

use std::fmt;
use std::time::Duration;

use http::header::{HeaderName, HeaderValue};
use http::HeaderMap;
use shardwheel::deadline::{format_grpc_timeout, parse_grpc_timeout};

/// The header's name.
pub(crate) const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");

/// A `grpc-timeout` value the server could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Malformed(String);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed grpc-timeout: {}", self.0)
    }
}

/// The time a request's `grpc-timeout` gives it, if any: the last value sent, or the first
/// malformed one.
pub(crate) fn incoming(headers: &HeaderMap) -> Result<Option<Duration>, Malformed> {
    let mut last = None;
    for value in headers.get_all(GRPC_TIMEOUT) {
        let text = value
            .to_str()
            .map_err(|_| Malformed(format!("{value:?} is not ASCII text")))?;
        let time =
            parse_grpc_timeout(text).map_err(|error| Malformed(format!("{text:?}: {error}")))?;
        last = Some(time);
    }
    Ok(last)
}

/// Sets a request's `grpc-timeout` to `time`, in place of any it had.
pub(crate) fn set(headers: &mut HeaderMap, time: Duration) {
    let text = format_grpc_timeout(time);
    // Digits and a unit letter: always a valid header value.
    if let Ok(value) = HeaderValue::from_str(&text) {
        headers.insert(GRPC_TIMEOUT, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(GRPC_TIMEOUT, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn the_last_of_several_values_counts_and_a_malformed_one_is_an_error() {
        assert_eq!(incoming(&headers(&[])), Ok(None));
        assert_eq!(
            incoming(&headers(&["5S"])),
            Ok(Some(Duration::from_secs(5)))
        );
        assert_eq!(
            incoming(&headers(&["5S", "100m"])),
            Ok(Some(Duration::from_millis(100)))
        );
        assert_eq!(incoming(&headers(&["0n"])), Ok(Some(Duration::ZERO)));
        let huge = incoming(&headers(&["99999999H"])).unwrap().unwrap();
        assert_eq!(huge, Duration::from_secs(99_999_999 * 3600));
        for bad in ["", "5", "5s", "123456789S", "-5S", " 5S", "5 S", "1.5S"] {
            assert!(incoming(&headers(&[bad])).is_err(), "{bad:?}");
            assert!(
                incoming(&headers(&["5S", bad])).is_err(),
                "{bad:?} after a good one"
            );
            assert!(
                incoming(&headers(&[bad, "5S"])).is_err(),
                "{bad:?} before a good one"
            );
        }
    }

    #[test]
    fn a_set_value_replaces_what_was_there_and_reads_back_no_shorter() {
        let mut map = headers(&["5S", "7S"]);
        set(&mut map, Duration::from_micros(1_234_567));
        assert_eq!(map.get_all(GRPC_TIMEOUT).iter().count(), 1);
        let read = incoming(&map).unwrap().unwrap();
        assert!(read >= Duration::from_micros(1_234_567));
    }
}
