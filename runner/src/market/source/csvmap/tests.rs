//! CSV mapping pieces: date formats.

use super::row::date;
use chrono::NaiveDate;

#[test]
fn compact_dates_take_exactly_eight_digits() {
    let day = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).unwrap();
    assert_eq!(date("20200103", None), Ok(day(2020, 1, 3)));
    assert_eq!(date("20200103", Some("%Y%m%d")), Ok(day(2020, 1, 3)));
    assert_eq!(date("2020-01-03 00:00:00", None), Ok(day(2020, 1, 3)));
    assert!(date("2020013", None).is_err(), "seven digits are no date");
    assert!(date("2020013", Some("%Y%m%d")).is_err());
    assert!(date("202001031", None).is_err());
}
