//! The text of a deadline sent on a call: gRPC's `grpc-timeout` header value, an integer of
//! at most 8 digits and a unit (`H`, `M`, `S`, `m`, `u`, `n`).

use std::error::Error;
use std::fmt;
use std::time::Duration;

/// The most digits gRPC allows in a timeout's value, and the largest value of as many.
const MAX_DIGITS: usize = 8;
const MAX_VALUE: u64 = 99_999_999;

/// The units, finest first: each one's letter and its length in nanoseconds.
const UNITS: [(u8, u64); 6] = [
    (b'n', 1),
    (b'u', 1_000),
    (b'm', 1_000_000),
    (b'S', 1_000_000_000),
    (b'M', 60_000_000_000),
    (b'H', 3_600_000_000_000),
];

/// `time` as a `grpc-timeout` value, in the finest unit that fits 8 digits, rounded up (as
/// grpc-go does): never earlier than the caller's. Zero is `0n`; the most, 99,999,999 hours.
///
/// ```
/// use std::time::Duration;
/// use shardwheel::deadline::{format_grpc_timeout, parse_grpc_timeout};
/// assert_eq!(format_grpc_timeout(Duration::from_millis(250)), "250000u");
/// assert_eq!(format_grpc_timeout(Duration::from_secs(300)), "300000m");
/// let sent = Duration::from_micros(1_234_567);
/// assert_eq!(parse_grpc_timeout(&format_grpc_timeout(sent)), Ok(sent));
/// ```
pub fn format_grpc_timeout(time: Duration) -> String {
    let nanos = time.as_nanos();
    for (unit, length) in UNITS {
        let value = nanos.div_ceil(u128::from(length));
        if value <= u128::from(MAX_VALUE) {
            return format!("{value}{}", char::from(unit));
        }
    }
    format!("{MAX_VALUE}H")
}

/// The time a `grpc-timeout` value gives: 1 to 8 ASCII digits, then a unit (`H`, `M`, `S`,
/// `m`, `u`, `n`); no whitespace.
///
/// # Errors
/// [`GrpcTimeoutError`] for any other text, saying what is wrong with it.
///
/// ```
/// use std::time::Duration;
/// use shardwheel::deadline::parse_grpc_timeout;
/// assert_eq!(parse_grpc_timeout("5S"), Ok(Duration::from_secs(5)));
/// assert_eq!(parse_grpc_timeout("100m"), Ok(Duration::from_millis(100)));
/// assert!(parse_grpc_timeout("5").is_err());
/// assert!(parse_grpc_timeout("123456789S").is_err());
/// ```
pub fn parse_grpc_timeout(text: &str) -> Result<Duration, GrpcTimeoutError> {
    let bytes = text.as_bytes();
    let Some((&unit, digits)) = bytes.split_last() else {
        return Err(GrpcTimeoutError::new("it is empty"));
    };
    let Some(&(_, length)) = UNITS.iter().find(|(letter, _)| *letter == unit) else {
        return Err(GrpcTimeoutError::new(
            "it does not end in a unit: H, M, S, m, u or n",
        ));
    };
    if digits.is_empty() {
        return Err(GrpcTimeoutError::new("it has no digits before its unit"));
    }
    if digits.len() > MAX_DIGITS {
        return Err(GrpcTimeoutError::new("it has more than 8 digits"));
    }
    if !digits.iter().all(u8::is_ascii_digit) {
        return Err(GrpcTimeoutError::new("its value is not all ASCII digits"));
    }
    let value = digits
        .iter()
        .fold(0u64, |value, digit| value * 10 + u64::from(digit - b'0'));
    // At most 99,999,999 hours: about 3.6e20 ns, beyond a u64 but well within a Duration.
    let nanos = u128::from(value) * u128::from(length);
    let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
    let subsec = u32::try_from(nanos % 1_000_000_000).unwrap_or(0);
    Ok(Duration::new(secs, subsec))
}

/// A `grpc-timeout` value that [`parse_grpc_timeout`] could not read, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrpcTimeoutError {
    reason: &'static str,
}

impl GrpcTimeoutError {
    fn new(reason: &'static str) -> Self {
        GrpcTimeoutError { reason }
    }
}

impl fmt::Display for GrpcTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid grpc-timeout value: {}", self.reason)
    }
}

impl Error for GrpcTimeoutError {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn each_unit_reads_and_the_finest_that_fits_is_written() {
        let cases = [
            ("7n", Duration::from_nanos(7)),
            ("7u", Duration::from_micros(7)),
            ("7m", Duration::from_millis(7)),
            ("7S", Duration::from_secs(7)),
            ("7M", Duration::from_secs(7 * 60)),
            ("7H", Duration::from_secs(7 * 3600)),
        ];
        for (text, time) in cases {
            assert_eq!(parse_grpc_timeout(text), Ok(time), "{text}");
        }
        assert_eq!(format_grpc_timeout(Duration::ZERO), "0n");
        assert_eq!(
            format_grpc_timeout(Duration::from_nanos(99_999_999)),
            "99999999n"
        );
        assert_eq!(
            format_grpc_timeout(Duration::from_nanos(100_000_001)),
            "100001u"
        );
        assert_eq!(
            format_grpc_timeout(Duration::from_secs(7 * 3600)),
            "25200000m"
        );
        assert_eq!(format_grpc_timeout(Duration::MAX), "99999999H");
        assert_eq!(
            parse_grpc_timeout("99999999H"),
            Ok(Duration::from_secs(99_999_999 * 3600))
        );
    }

    #[test]
    fn a_written_time_reads_back_never_earlier() {
        for nanos in [1, 999, 1_000_001, 123_456_789_012, u64::MAX] {
            let time = Duration::from_nanos(nanos);
            let back = parse_grpc_timeout(&format_grpc_timeout(time)).unwrap();
            assert!(back >= time, "{time:?} came back as {back:?}");
            // A coarser unit is taken only past 10^8 of the finer: at least 10^5 of its own.
            assert!(back - time <= time / 100_000 + Duration::from_nanos(1));
        }
    }

    #[test]
    fn bad_text_is_an_error_that_says_why() {
        for (text, why) in [
            ("", "empty"),
            ("5", "unit"),
            ("S", "no digits"),
            ("123456789S", "8 digits"),
            ("-5S", "ASCII digits"),
            ("5 S", "ASCII digits"),
            ("٣S", "ASCII digits"),
            ("5s", "unit"),
        ] {
            let error = parse_grpc_timeout(text).unwrap_err();
            assert!(error.to_string().contains(why), "{text:?}: {error}");
        }
    }
}
