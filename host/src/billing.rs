//! The price of a job. The ledger itself (balance and the idempotent money movements of a job:
//! `charge` when its upload completes, `settle` after recognition, `refund` when it fails, at
//! most one of each) is kept by the store ([`crate::store::Store`]).

/// What a job of `seconds` costs at `price_cents_per_minute`: ceil(seconds / 60 * price), computed
/// on whole milliseconds so that no float rounding can add a cent.
pub fn required_cents(seconds: f64, price_cents_per_minute: i64) -> i64 {
    if !seconds.is_finite() || seconds <= 0.0 || price_cents_per_minute <= 0 {
        return 0;
    }
    let ms = (seconds * 1000.0).round().min(1e15) as i128;
    let num = ms * price_cents_per_minute as i128;
    ((num + 59_999) / 60_000).min(i64::MAX as i128) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn price_is_rounded_up_to_the_cent() {
        assert_eq!(required_cents(60.0, 10), 10);
        assert_eq!(required_cents(3.0, 10), 1);
        assert_eq!(required_cents(61.0, 10), 11);
        assert_eq!(required_cents(0.001, 10), 1);
        assert_eq!(required_cents(600.0, 7), 70);
        assert_eq!(required_cents(f64::NAN, 10), 0);
    }
}
