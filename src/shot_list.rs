//! Shot-change lists for `cuecraft layout --shot-changes` and `cuecraft check --shot-changes`:
//! the times of a video's shot changes (the first frame of each new shot), in seconds, either as
//! a JSON array (`[4.2, 9.76]`, or an object with a `shotChanges` array) or as text with one time
//! per line (Subtitle Edit's shot-change files; blank lines and `#` comments ignored).

use std::path::Path;

use anyhow::{bail, Context};
use cuecraft_engine::Millis;
use serde_json::Value;

/// Reads the shot-change times of `path`, sorted.
pub fn read(path: &Path) -> anyhow::Result<Vec<Millis>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&text).with_context(|| format!("{}: not a shot-change list", path.display()))
}

/// The shot-change times of a list (see the module), sorted; an error names the first bad entry.
pub fn parse(text: &str) -> anyhow::Result<Vec<Millis>> {
    let text = text.trim_start_matches('\u{feff}');
    let time = |v: f64, what: &dyn std::fmt::Display| -> anyhow::Result<Millis> {
        match Millis::from_secs_f64(v) {
            Some(t) if t.0 >= 0 => Ok(t),
            _ => bail!("{what}: {v} is not a time in seconds"),
        }
    };
    let mut times = Vec::new();
    if matches!(text.trim_start().chars().next(), Some('[' | '{')) {
        let value: Value = serde_json::from_str(text).context("not JSON")?;
        let list = match &value {
            Value::Array(a) => a,
            Value::Object(o) => match o.get("shotChanges") {
                Some(Value::Array(a)) => a,
                _ => bail!("expected an array of seconds or an object with \"shotChanges\""),
            },
            _ => bail!("expected an array of seconds"),
        };
        for (i, v) in list.iter().enumerate() {
            let Some(x) = v.as_f64() else {
                bail!("entry {}: {v} is not a number of seconds", i + 1);
            };
            times.push(time(x, &format_args!("entry {}", i + 1))?);
        }
    } else {
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let Ok(x) = line.parse::<f64>() else {
                bail!("line {}: {line:?} is not a number of seconds", n + 1);
            };
            times.push(time(x, &format_args!("line {}", n + 1))?);
        }
    }
    times.sort_unstable();
    times.dedup();
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_and_text_lists() {
        let want = vec![Millis(4200), Millis(9760)];
        assert_eq!(parse("[9.76, 4.2]").unwrap(), want);
        assert_eq!(parse(r#"{"shotChanges": [4.2, 9.76, 4.2]}"#).unwrap(), want);
        assert_eq!(parse("# cuts\n4.2\n\n9.76  # a wipe\n").unwrap(), want);
        assert_eq!(parse("").unwrap(), vec![]);
    }

    #[test]
    fn names_the_first_bad_entry() {
        let err = |t: &str| parse(t).unwrap_err().to_string();
        assert_eq!(
            err("4.2\nfour\n"),
            "line 2: \"four\" is not a number of seconds"
        );
        assert_eq!(err("[1, -2]"), "entry 2: -2 is not a time in seconds");
        assert_eq!(
            err("[1, \"x\"]"),
            "entry 2: \"x\" is not a number of seconds"
        );
        assert_eq!(err("NaN"), "line 1: NaN is not a time in seconds");
    }
}
