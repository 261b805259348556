//! The compact copy of a segment's vectors that searches scan: each row as a per-row scale (f32) and `DIM`
//! signed bytes, a quarter of the f32 matrix. The scan ranks every chunk by the int8 dot product; the best
//! candidates are then re-scored exactly from the f32 rows, which stay mapped and are touched only for them
//! (`<id>.q8` beside `<id>.vec`; a segment written before this file existed is scanned in f32).

use super::format::{FormatError, HEADER_LEN};
use crate::embed::DIM;
use memmap2::Mmap;

/// Magic of a `<id>.q8` file.
pub(crate) const COMPACT_MAGIC: &[u8; 8] = b"GHOLAQ8V";
/// Bytes of one compact row: its scale (little-endian f32) then `DIM` signed bytes.
pub const COMPACT_ROW: usize = 4 + DIM;

/// A row's scale for values up to ±`levels` (max |v_i| / levels; 0 for a zero or non-finite row) and its
/// inverse (0 when the scale is): the int8 and 4-bit copies quantize alike.
pub(crate) fn row_scale(v: &[f32], levels: f32) -> (f32, f32) {
    let max = v.iter().take(DIM).fold(0f32, |m, x| m.max(x.abs()));
    if max > 0.0 && max.is_finite() {
        let scale = max / levels;
        (scale, 1.0 / scale)
    } else {
        (0.0, 0.0)
    }
}

/// Appends `v` quantized to `out`: scale = max |v_i| / 127, bytes = round(v_i / scale). A zero row has scale 0.
pub fn quantize_row(v: &[f32], out: &mut Vec<u8>) {
    let (scale, inv) = row_scale(v, 127.0);
    out.extend_from_slice(&scale.to_le_bytes());
    out.extend(
        v.iter()
            .take(DIM)
            .map(|x| (x * inv).round().clamp(-127.0, 127.0) as i8 as u8),
    );
    // A short row (never written by ghola) is padded so that every row has the same length.
    out.extend(std::iter::repeat_n(0u8, DIM.saturating_sub(v.len())));
}

/// A query quantized like a row, for the int8 scan.
pub struct CompactQuery {
    pub scale: f32,
    pub values: [i8; DIM],
}

impl CompactQuery {
    /// Quantizes a query vector of `DIM` floats.
    pub fn new(q: &[f32]) -> Self {
        let mut bytes = Vec::with_capacity(COMPACT_ROW);
        quantize_row(q, &mut bytes);
        let mut values = [0i8; DIM];
        for (v, b) in values.iter_mut().zip(&bytes[4..]) {
            *v = *b as i8;
        }
        Self {
            scale: f32::from_le_bytes(bytes[..4].try_into().unwrap_or([0; 4])),
            values,
        }
    }
}

/// Integer dot product of two `DIM`-byte rows, written so the compiler vectorises it (widening multiply-add).
#[inline(always)]
pub fn dot_i8(a: &[i8; DIM], b: &[i8]) -> i32 {
    let b: &[i8; DIM] = match b.try_into() {
        Ok(b) => b,
        Err(_) => return 0,
    };
    let mut acc = [0i32; 16];
    for (ca, cb) in a.chunks_exact(16).zip(b.chunks_exact(16)) {
        for i in 0..16 {
            acc[i] += ca[i] as i16 as i32 * cb[i] as i16 as i32;
        }
    }
    acc.iter().sum()
}

/// [`dot_i8`] with AVX2: 32 products a step by `vpmaddubsw` (the row's magnitudes times the query's values with
/// the row's signs; no pair of products reaches the i16 limit, as values stay within ±127), summed in i32.
/// The same integer as [`dot_i8`], four times as fast: the scan of a million rows waits on this, not on memory.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn dot_i8_avx2(a: &[i8; DIM], b: &[i8]) -> i32 {
    use std::arch::x86_64::*;
    let b: &[i8; DIM] = match b.try_into() {
        Ok(b) => b,
        Err(_) => return 0,
    };
    let ones = _mm256_set1_epi16(1);
    let mut acc = _mm256_setzero_si256();
    for k in 0..DIM / 32 {
        // SAFETY: both arrays hold DIM bytes and k * 32 + 32 <= DIM; unaligned loads.
        let (x, y) = unsafe {
            (
                _mm256_loadu_si256(a.as_ptr().add(k * 32) as *const __m256i),
                _mm256_loadu_si256(b.as_ptr().add(k * 32) as *const __m256i),
            )
        };
        let pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(y, y), _mm256_sign_epi8(x, y));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
    }
    sum_lanes(acc)
}

/// The sum of an AVX2 register's eight i32 lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn sum_lanes(v: std::arch::x86_64::__m256i) -> i32 {
    use std::arch::x86_64::*;
    let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01_00_11_10));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10_11_00_01));
    _mm_cvtsi128_si32(s)
}

/// A mapped file of fixed-width rows, each a scale (little-endian f32) then `ROW - 4` bytes: what the int8 copy
/// and the 4-bit copy ([`super::int4`]) have in common.
pub struct ScaledRows<const ROW: usize>(Mmap);

impl<const ROW: usize> ScaledRows<ROW> {
    /// Wraps a mapped and checked file; `rows` is how many rows the metadata refers to.
    pub fn new(map: Mmap, rows: usize, name: &str) -> Result<Self, FormatError> {
        let payload = map.len() - HEADER_LEN;
        if !payload.is_multiple_of(ROW) || payload / ROW < rows {
            return Err(FormatError::Damaged(name.to_string()));
        }
        Ok(Self(map))
    }

    /// Row `row`: its scale and its bytes (empty when out of range, which the open check rules out).
    #[inline(always)]
    pub fn row(&self, row: u32) -> (f32, &[u8]) {
        let start = HEADER_LEN + row as usize * ROW;
        match self.0.get(start..start + ROW) {
            Some(r) => (f32::from_le_bytes([r[0], r[1], r[2], r[3]]), &r[4..]),
            None => (0.0, &[]),
        }
    }
}

/// A segment's compact rows, memory-mapped.
pub struct CompactVectors(ScaledRows<COMPACT_ROW>);

impl CompactVectors {
    /// Wraps a mapped and checked `<id>.q8` file; `rows` is how many rows the metadata refers to.
    pub fn new(map: Mmap, rows: usize, name: &str) -> Result<Self, FormatError> {
        ScaledRows::new(map, rows, name).map(Self)
    }

    /// Row `row`: its scale and its signed bytes (empty when out of range, which the open check rules out).
    #[inline(always)]
    pub fn row(&self, row: u32) -> (f32, &[i8]) {
        let (scale, bytes) = self.0.row(row);
        // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid for both.
        let signed =
            unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const i8, bytes.len()) };
        (scale, signed)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A pseudo-random unit vector of `DIM` floats (the quantization tests' rows and queries).
    pub(crate) fn unit(seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        let mut v: Vec<f32> = (0..DIM)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        v
    }

    #[test]
    fn int8_dot_is_close_to_the_f32_cosine() {
        let mut worst = 0f32;
        for i in 0..200 {
            let (a, b) = (unit(i), unit(i + 1000));
            let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            let q = CompactQuery::new(&a);
            let mut row = Vec::new();
            quantize_row(&b, &mut row);
            let scale = f32::from_le_bytes(row[..4].try_into().unwrap());
            let bytes: Vec<i8> = row[4..].iter().map(|b| *b as i8).collect();
            let approx = q.scale * scale * dot_i8(&q.values, &bytes) as f32;
            worst = worst.max((approx - exact).abs());
        }
        assert!(worst < 0.01, "worst error {worst}");
        assert!(worst > 0.0, "quantization loses something");
    }

    #[test]
    fn the_avx2_dot_is_the_portable_one() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            for i in 0..200 {
                let q = CompactQuery::new(&unit(i));
                let mut row = Vec::new();
                quantize_row(&unit(i + 500), &mut row);
                let mut bytes: Vec<i8> = row[4..].iter().map(|b| *b as i8).collect();
                // The extremes too: ±127 in every place.
                if i % 50 == 0 {
                    bytes
                        .iter_mut()
                        .for_each(|b| *b = if i % 100 == 0 { 127 } else { -127 });
                }
                // SAFETY: AVX2 was detected just above.
                let fast = unsafe { dot_i8_avx2(&q.values, &bytes) };
                assert_eq!(fast, dot_i8(&q.values, &bytes));
            }
            let extreme = [127i8; DIM];
            // SAFETY: as above.
            assert_eq!(
                unsafe { dot_i8_avx2(&extreme, &[-127i8; DIM]) },
                -127 * 127 * DIM as i32
            );
        }
    }

    #[test]
    fn zero_and_short_rows_quantize_safely() {
        let mut row = Vec::new();
        quantize_row(&[0.0; DIM], &mut row);
        assert_eq!(row.len(), COMPACT_ROW);
        assert!(row.iter().all(|b| *b == 0));
        row.clear();
        quantize_row(&[1.0, -1.0], &mut row);
        assert_eq!(row.len(), COMPACT_ROW);
        assert_eq!(row[4] as i8, 127);
        assert_eq!(row[5] as i8, -127);
    }
}
