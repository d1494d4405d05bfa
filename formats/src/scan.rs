//! Byte scans the readers and writers run on every line: whether any byte of a slice is one of a
//! few, 16 bytes at a time. The fast paths (a line without markup, line breaks or control
//! characters is passed on as it is) rest on them.

/// Whether `bytes` contains `a` or `b`.
#[inline]
pub(crate) fn any_of2(bytes: &[u8], a: u8, b: u8) -> bool {
    any_byte(bytes, |x| (x == a) | (x == b))
}

/// Whether `bytes` contains `a`, `b` or `c`.
#[inline]
pub(crate) fn any_of3(bytes: &[u8], a: u8, b: u8, c: u8) -> bool {
    any_byte(bytes, |x| (x == a) | (x == b) | (x == c))
}

/// Whether `bytes` contains `a`, `b`, `c` or `d`.
#[inline]
pub(crate) fn any_of4(bytes: &[u8], a: u8, b: u8, c: u8, d: u8) -> bool {
    any_byte(bytes, |x| (x == a) | (x == b) | (x == c) | (x == d))
}

/// Whether `hit` holds for a byte of `bytes`: 16 bytes at a time without branches inside a block,
/// which the compiler turns into vector compares. The last block overlaps the one before it; a
/// slice shorter than a block is padded with spaces (`hit(b' ')` must be false).
#[inline(always)]
pub(crate) fn any_byte(bytes: &[u8], hit: impl Fn(u8) -> bool) -> bool {
    let block = |b: &[u8; 16]| b.iter().fold(0u8, |m, &x| m | hit(x) as u8) != 0;
    if bytes.len() < 16 {
        let mut padded = [b' '; 16];
        padded[..bytes.len()].copy_from_slice(bytes);
        return block(&padded);
    }
    let mut blocks = bytes.chunks_exact(16);
    for b in &mut blocks {
        if block(b.try_into().unwrap_or(&[0; 16])) {
            return true;
        }
    }
    if blocks.remainder().is_empty() {
        return false;
    }
    let tail = &bytes[bytes.len() - 16..];
    block(tail.try_into().unwrap_or(&[0; 16]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_is_found_at_every_position_of_every_length() {
        assert!(any_of3(b"xx{", b'{', b'}', b'\\') && !any_of2(b"abc", b'\r', b'\n'));
        for len in 0..50 {
            for at in 0..len {
                let mut v = vec![b'a'; len];
                assert!(!any_of2(&v, b'\r', b'\n'));
                assert!(!any_of4(&v, b'&', b'<', b'>', 0));
                v[at] = b'\n';
                assert!(any_of2(&v, b'\r', b'\n'), "{len} {at}");
                v[at] = 0;
                assert!(any_of4(&v, b'&', b'<', b'>', 0), "{len} {at}");
            }
        }
    }
}
