//! The value parsers of the flags (clap `value_parser`s): each says in one
//! line what it takes, which becomes the usage error.

/// A whole number above 0 (`--chunk`, `--max-frame-bytes`).
pub fn positive(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("takes a positive whole number".to_owned()),
    }
}

/// A port, 0 to 65535.
pub fn port(value: &str) -> Result<u16, String> {
    value.parse().map_err(|_| "takes 0..65535".to_owned())
}

/// A finite speed of at least 0 (`serve`: 0 freezes the clock).
pub fn speed_or_frozen(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err("takes a number ≥ 0".to_owned()),
    }
}

/// A finite speed above 0 (`demo`).
pub fn speed(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err("takes a number > 0".to_owned()),
    }
}

/// Milliseconds (`--heartbeat-ms`).
pub fn milliseconds(value: &str) -> Result<i64, String> {
    value.parse().map_err(|_| "takes milliseconds".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_parser_takes_what_it_says_and_nothing_else() {
        assert_eq!(positive("3"), Ok(3));
        assert!(positive("0").is_err() && positive("-1").is_err() && positive("x").is_err());
        assert_eq!(port("0"), Ok(0));
        assert!(port("65536").is_err());
        assert_eq!(speed_or_frozen("0"), Ok(0.0));
        assert!(speed_or_frozen("-1").is_err() && speed_or_frozen("inf").is_err());
        assert!(speed("0").is_err() && speed("NaN").is_err());
        assert_eq!(speed("2.5"), Ok(2.5));
        assert_eq!(milliseconds("-5"), Ok(-5));
        assert!(milliseconds("1.5").is_err());
    }
}
