//! A minimal JSON reader for the one shape the driver prints: a flat object whose values are
//! strings, numbers or `null`. A full run reads each child process's report back with it.

use std::fmt;

/// A value of the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scalar {
    Str(String),
    /// A number, as the text it was written with.
    Number(String),
    Null,
}

/// Why a text is not such an object, and where (a byte offset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    at: usize,
    what: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.at)
    }
}

/// The fields of the flat object `text` holds (whitespace around it allowed), in order. Nested
/// objects, arrays, `true`, `false` and duplicate keys are refused.
pub(crate) fn parse_object(text: &str) -> Result<Vec<(String, Scalar)>, ParseError> {
    let mut parser = Parser { text, pos: 0 };
    let mut fields: Vec<(String, Scalar)> = Vec::new();
    parser.skip_whitespace();
    parser.expect(b'{', "expected '{'")?;
    parser.skip_whitespace();
    if !parser.eat(b'}') {
        loop {
            parser.skip_whitespace();
            let key_at = parser.pos;
            let key = parser.string()?;
            if fields.iter().any(|(seen, _)| *seen == key) {
                return Err(parser.error_at(key_at, "duplicate key"));
            }
            parser.skip_whitespace();
            parser.expect(b':', "expected ':'")?;
            parser.skip_whitespace();
            let value = parser.scalar()?;
            fields.push((key, value));
            parser.skip_whitespace();
            if parser.eat(b',') {
                continue;
            }
            parser.expect(b'}', "expected ',' or '}'")?;
            break;
        }
    }
    parser.skip_whitespace();
    if parser.pos != text.len() {
        return Err(parser.error("unexpected text after the object"));
    }
    Ok(fields)
}

struct Parser<'a> {
    text: &'a str,
    /// Always on a character boundary: it only stops on ASCII bytes or at the end.
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect(&mut self, byte: u8, what: &'static str) -> Result<(), ParseError> {
        if self.eat(byte) {
            Ok(())
        } else {
            Err(self.error(what))
        }
    }

    fn error(&self, what: &'static str) -> ParseError {
        self.error_at(self.pos, what)
    }

    fn error_at(&self, at: usize, what: &'static str) -> ParseError {
        ParseError { at, what }
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn scalar(&mut self) -> Result<Scalar, ParseError> {
        match self.peek() {
            Some(b'"') => self.string().map(Scalar::Str),
            Some(b'-' | b'0'..=b'9') => self.number().map(Scalar::Number),
            Some(b'n') if self.text[self.pos..].starts_with("null") => {
                self.pos += "null".len();
                Ok(Scalar::Null)
            }
            _ => Err(self.error("expected a string, a number or null")),
        }
    }

    /// A number as JSON writes one: `-`, an integer part without leading zeros, then an
    /// optional fraction and exponent. Returns its text.
    fn number(&mut self) -> Result<String, ParseError> {
        let start = self.pos;
        self.eat(b'-');
        if !self.eat(b'0') {
            self.digits()?;
        }
        if self.eat(b'.') {
            self.digits()?;
        }
        if self.eat(b'e') || self.eat(b'E') {
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            self.digits()?;
        }
        Ok(self.text[start..self.pos].to_owned())
    }

    /// One or more decimal digits.
    fn digits(&mut self) -> Result<(), ParseError> {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        if self.pos == start {
            Err(self.error("expected a digit"))
        } else {
            Ok(())
        }
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.expect(b'"', "expected a string")?;
        let mut out = String::new();
        let mut run = self.pos;
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    out.push_str(&self.text[run..self.pos]);
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    out.push_str(&self.text[run..self.pos]);
                    self.pos += 1;
                    out.push(self.escape()?);
                    run = self.pos;
                }
                Some(0..=0x1f) => return Err(self.error("control character in a string")),
                Some(_) => self.pos += 1,
            }
        }
    }

    /// The character an escape stands for, the backslash already read.
    fn escape(&mut self) -> Result<char, ParseError> {
        let at = self.pos;
        let Some(byte) = self.peek() else {
            return Err(self.error("unterminated string"));
        };
        self.pos += 1;
        let c = match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4()?;
                let code = if (0xd800..0xdc00).contains(&first) {
                    // A high surrogate: the low one must follow as another \u escape.
                    if !(self.eat(b'\\') && self.eat(b'u')) {
                        return Err(self.error_at(at, "unpaired surrogate"));
                    }
                    let second = self.hex4()?;
                    if !(0xdc00..0xe000).contains(&second) {
                        return Err(self.error_at(at, "unpaired surrogate"));
                    }
                    0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00)
                } else {
                    first
                };
                return char::from_u32(code).ok_or_else(|| self.error_at(at, "unpaired surrogate"));
            }
            _ => return Err(self.error_at(at, "unknown escape")),
        };
        Ok(c)
    }

    /// Four hex digits, as a number.
    fn hex4(&mut self) -> Result<u32, ParseError> {
        let mut value = 0;
        for _ in 0..4 {
            let digit = self
                .peek()
                .and_then(|byte| char::from(byte).to_digit(16))
                .ok_or_else(|| self.error("expected four hex digits"))?;
            value = value * 16 + digit;
            self.pos += 1;
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(text: &str) -> Scalar {
        Scalar::Number(text.to_owned())
    }

    #[test]
    fn a_report_line_reads_back_in_order_with_numbers_verbatim() {
        let line = r#"{"workload":"accuracy","timers":5,"p50_ms":0.510,"big":-1.5E+3,"bad":null}"#;
        assert_eq!(
            parse_object(line),
            Ok(vec![
                ("workload".to_owned(), Scalar::Str("accuracy".to_owned())),
                ("timers".to_owned(), number("5")),
                ("p50_ms".to_owned(), number("0.510")),
                ("big".to_owned(), number("-1.5E+3")),
                ("bad".to_owned(), Scalar::Null),
            ])
        );
    }

    #[test]
    fn whitespace_empty_objects_and_escapes() {
        assert_eq!(parse_object(" {\t}\r\n"), Ok(Vec::new()));
        assert_eq!(
            parse_object(r#" { "a\"b" : "\\\/\b\f\n\r\t\u00e9\ud83d\ude00 é" , "z" : 0 } "#),
            Ok(vec![
                (
                    "a\"b".to_owned(),
                    Scalar::Str("\\/\u{8}\u{c}\n\r\té\u{1f600} é".to_owned())
                ),
                ("z".to_owned(), number("0")),
            ])
        );
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            "[]",
            "{",
            "}",
            r#"{"a"}"#,
            r#"{"a":}"#,
            r#"{"a":1,}"#,
            r#"{"a":1 "b":2}"#,
            r#"{a:1}"#,
            r#"{"a":1}x"#,
            r#"{"a":1}{}"#,
            r#"{"a":{}}"#,
            r#"{"a":[1]}"#,
            r#"{"a":true}"#,
            r#"{"a":nul}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":.5}"#,
            r#"{"a":-}"#,
            r#"{"a":1e}"#,
            r#"{"a":+1}"#,
            r#"{"a":"b}"#,
            "{\"a\":\"\n\"}",
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12"}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\ud800\u0041"}"#,
            r#"{"a":"\udc00"}"#,
        ] {
            assert!(parse_object(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn errors_say_where() {
        let error = parse_object(r#"{"a":1 "b":2}"#).unwrap_err();
        assert_eq!(error.to_string(), "expected ',' or '}' at byte 7");
    }
}
