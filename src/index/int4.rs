//! The smallest copy of a segment's vectors, what a search over a large history scans first: each row as a
//! per-row scale (f32) and `DIM` signed 4-bit values, an eighth of the f32 matrix and half of the int8 copy
//! ([`super::int8`]). At a million messages the int8 scan reads 390 MB per query and waits on memory; this copy
//! halves that. Its scores are coarser (off by up to about 0.04 where int8 is off by 0.003), so it only picks
//! which messages the int8 rows then score: those within a margin of the best (see `search::scan`).
//! `<id>.q4` beside `<id>.q8`; a segment written before this file existed is scanned in int8 alone.
//!
//! Byte `j` of a row holds dimension `j` in its low half and dimension `j + DIM / 2` in its high half, each as
//! the value plus 8 (1 ..= 15), so that a scan multiplies two contiguous halves of the query.

use super::int8::CompactQuery;
use crate::embed::DIM;

/// Magic of a `<id>.q4` file.
pub(crate) const NIBBLE_MAGIC: &[u8; 8] = b"GHOLAQ4V";
/// Bytes of one row: its scale (little-endian f32) then `DIM / 2` bytes of two values each.
pub const NIBBLE_ROW: usize = 4 + DIM / 2;
/// What a value is stored as: value + 8.
const OFFSET: i32 = 8;

/// Appends `v` quantized to `out`: scale = max |v_i| / 7, values = round(v_i / scale). A zero row has scale 0.
pub fn quantize_row(v: &[f32], out: &mut Vec<u8>) {
    let (scale, inv) = super::int8::row_scale(v, 7.0);
    out.extend_from_slice(&scale.to_le_bytes());
    // A short row (never written by ghola) reads as zeros past its end.
    let value = |i: usize| {
        let x = v.get(i).copied().unwrap_or(0.0);
        ((x * inv).round().clamp(-7.0, 7.0) as i32 + OFFSET) as u8
    };
    out.extend((0..DIM / 2).map(|j| value(j) | (value(j + DIM / 2) << 4)));
}

/// Integer dot product of a quantized query and one row's `DIM / 2` bytes, written so the compiler vectorises
/// it; `query_sum` is the sum of the query's values (the stored offset is taken off once, not per value).
#[inline(always)]
pub fn dot_u4_i8(q: &CompactQuery, query_sum: i32, row: &[u8]) -> i32 {
    let row: &[u8; DIM / 2] = match row.try_into() {
        Ok(r) => r,
        Err(_) => return 0,
    };
    let (lo, hi) = q.values.split_at(DIM / 2);
    let mut acc = [0i32; 16];
    for ((b, l), h) in row
        .chunks_exact(16)
        .zip(lo.chunks_exact(16))
        .zip(hi.chunks_exact(16))
    {
        for i in 0..16 {
            let (x, y) = ((b[i] & 15) as i16, (b[i] >> 4) as i16);
            acc[i] += (x * l[i] as i16) as i32 + (y * h[i] as i16) as i32;
        }
    }
    acc.iter().sum::<i32>() - OFFSET * query_sum
}

/// [`dot_u4_i8`] with AVX2: a row's 32 bytes give 32 low and 32 high values (each 1 ..= 15, unsigned), which
/// `vpmaddubsw` multiplies by the query's two halves in pairs (at most 2 × 15 × 127, far from the i16 limit),
/// summed in i32. The same integer as [`dot_u4_i8`].
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn dot_u4_i8_avx2(q: &CompactQuery, query_sum: i32, row: &[u8]) -> i32 {
    use std::arch::x86_64::*;
    let row: &[u8; DIM / 2] = match row.try_into() {
        Ok(r) => r,
        Err(_) => return 0,
    };
    let (lo, hi) = q.values.split_at(DIM / 2);
    let (mask, ones) = (_mm256_set1_epi8(15), _mm256_set1_epi16(1));
    let mut acc = _mm256_setzero_si256();
    for k in 0..DIM / 64 {
        // SAFETY: the row and each half of the query hold DIM / 2 bytes and k * 32 + 32 <= DIM / 2.
        let (b, l, h) = unsafe {
            (
                _mm256_loadu_si256(row.as_ptr().add(k * 32) as *const __m256i),
                _mm256_loadu_si256(lo.as_ptr().add(k * 32) as *const __m256i),
                _mm256_loadu_si256(hi.as_ptr().add(k * 32) as *const __m256i),
            )
        };
        let low = _mm256_and_si256(b, mask);
        let high = _mm256_and_si256(_mm256_srli_epi16(b, 4), mask);
        let pairs = _mm256_add_epi16(_mm256_maddubs_epi16(low, l), _mm256_maddubs_epi16(high, h));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
    }
    super::int8::sum_lanes(acc) - OFFSET * query_sum
}

/// A segment's 4-bit rows, memory-mapped (`<id>.q4`).
pub type NibbleVectors = super::int8::ScaledRows<NIBBLE_ROW>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::int8::tests::unit;

    fn approx(q: &[f32], row: &[f32]) -> f32 {
        let cq = CompactQuery::new(q);
        let sum: i32 = cq.values.iter().map(|v| *v as i32).sum();
        let mut bytes = Vec::new();
        quantize_row(row, &mut bytes);
        let scale = f32::from_le_bytes(bytes[..4].try_into().unwrap());
        cq.scale * scale * dot_u4_i8(&cq, sum, &bytes[4..]) as f32
    }

    #[test]
    fn int4_dot_is_within_the_scan_margin_of_the_f32_cosine() {
        let (mut worst, mut total) = (0f32, 0f32);
        for i in 0..500 {
            let (a, b) = (unit(i), unit(i + 1000));
            let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            let err = (approx(&a, &b) - exact).abs();
            worst = worst.max(err);
            total += err;
        }
        assert!(worst < 0.04, "worst error {worst}");
        assert!(total / 500.0 > 0.0005, "quantization loses something");
    }

    #[test]
    fn the_avx2_dot_is_the_portable_one() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            for i in 0..200 {
                let q = CompactQuery::new(&unit(i));
                let sum: i32 = q.values.iter().map(|v| *v as i32).sum();
                let mut row = Vec::new();
                quantize_row(&unit(i + 500), &mut row);
                // SAFETY: AVX2 was detected just above.
                let fast = unsafe { dot_u4_i8_avx2(&q, sum, &row[4..]) };
                assert_eq!(fast, dot_u4_i8(&q, sum, &row[4..]));
            }
            // The extremes: every value 7 (stored as 15, the largest) against a query of 127 in every place.
            let q = CompactQuery {
                scale: 1.0,
                values: [127; DIM],
            };
            let row = [0xFFu8; DIM / 2];
            // SAFETY: as above.
            assert_eq!(
                unsafe { dot_u4_i8_avx2(&q, 127 * DIM as i32, &row) },
                dot_u4_i8(&q, 127 * DIM as i32, &row)
            );
        }
    }

    #[test]
    fn a_row_is_its_own_best_match_and_its_opposite_the_worst() {
        let v = unit(7);
        let minus: Vec<f32> = v.iter().map(|x| -x).collect();
        assert!((approx(&v, &v) - 1.0).abs() < 0.04);
        assert!((approx(&v, &minus) + 1.0).abs() < 0.04);
    }

    #[test]
    fn zero_and_short_rows_quantize_safely() {
        let mut row = Vec::new();
        quantize_row(&[0.0; DIM], &mut row);
        assert_eq!(row.len(), NIBBLE_ROW);
        assert!(row[..4].iter().all(|b| *b == 0));
        assert!(
            row[4..].iter().all(|b| *b == 0x88),
            "zero is stored as 8 in both halves"
        );
        row.clear();
        quantize_row(&[1.0, -1.0], &mut row);
        assert_eq!(row.len(), NIBBLE_ROW);
        assert_eq!(
            row[4],
            15 | (8 << 4),
            "dimension 0 is 7 + 8, dimension 192 is 0 + 8"
        );
        assert_eq!(row[5], 1 | (8 << 4), "dimension 1 is -7 + 8");
    }
}
