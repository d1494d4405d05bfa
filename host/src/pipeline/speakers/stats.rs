//! Sufficient statistics of MFCC frames and the full-covariance Gaussians made from them.

// Small dense matrix algebra (Cholesky, triangular solves) reads as the textbook's index loops.
#![allow(clippy::needless_range_loop)]

/// Coefficients per frame (c1..c12).
pub const DIM: usize = 12;
/// Entries of a symmetric DIM x DIM matrix's upper triangle.
const TRI: usize = DIM * (DIM + 1) / 2;
/// Free parameters of a full-covariance Gaussian.
pub const PARAMS: f64 = (DIM + TRI) as f64;

/// Frame count, sum and sum of outer products (upper triangle).
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub n: f64,
    pub sum: [f64; DIM],
    pub outer: [f64; TRI],
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            n: 0.0,
            sum: [0.0; DIM],
            outer: [0.0; TRI],
        }
    }
}

impl Stats {
    pub fn add(&mut self, x: &[f64; DIM]) {
        self.n += 1.0;
        let mut k = 0;
        for i in 0..DIM {
            self.sum[i] += x[i];
            for j in i..DIM {
                self.outer[k] += x[i] * x[j];
                k += 1;
            }
        }
    }

    pub fn merge(&mut self, o: &Stats) {
        self.n += o.n;
        self.sum.iter_mut().zip(&o.sum).for_each(|(a, b)| *a += b);
        self.outer
            .iter_mut()
            .zip(&o.outer)
            .for_each(|(a, b)| *a += b);
    }

    fn mean(&self) -> [f64; DIM] {
        let mut m = self.sum;
        let n = self.n.max(1.0);
        m.iter_mut().for_each(|v| *v /= n);
        m
    }

    /// The maximum-likelihood covariance, pulled towards `prior` by `tau` frames' weight (so a
    /// short segment's covariance stays invertible and sensible).
    fn covariance(&self, prior: &[f64; TRI], tau: f64) -> [f64; TRI] {
        let m = self.mean();
        let mut c = [0.0; TRI];
        let mut k = 0;
        for i in 0..DIM {
            for j in i..DIM {
                let ml = if self.n > 0.0 {
                    self.outer[k] - self.n * m[i] * m[j]
                } else {
                    0.0
                };
                c[k] = (ml + tau * prior[k]) / (self.n + tau);
                k += 1;
            }
        }
        c
    }

    /// The covariance of all frames (the prior of [`Gaussian::from`]).
    pub fn plain_covariance(&self) -> [f64; TRI] {
        let zero = [0.0; TRI];
        let mut c = self.covariance(&zero, 0.0);
        // Keep it positive definite even for degenerate input (a constant signal).
        let mut k = 0;
        for i in 0..DIM {
            c[k] += 1e-3;
            k += DIM - i;
        }
        c
    }
}

/// A Gaussian with a full covariance, kept as mean, Cholesky factor and log-determinant.
#[derive(Debug, Clone)]
pub struct Gaussian {
    mean: [f64; DIM],
    /// Lower-triangular L with L L^T = covariance, row-major.
    chol: [[f64; DIM]; DIM],
    pub logdet: f64,
}

impl Gaussian {
    pub fn from(s: &Stats, prior: &[f64; TRI], tau: f64) -> Option<Gaussian> {
        let c = s.covariance(prior, tau);
        let mut a = [[0.0; DIM]; DIM];
        let mut k = 0;
        for i in 0..DIM {
            for j in i..DIM {
                a[i][j] = c[k];
                a[j][i] = c[k];
                k += 1;
            }
        }
        let mut l = [[0.0; DIM]; DIM];
        for i in 0..DIM {
            for j in 0..=i {
                let mut v = a[i][j];
                for p in 0..j {
                    v -= l[i][p] * l[j][p];
                }
                if i == j {
                    if v.is_nan() || v <= 1e-12 || !v.is_finite() {
                        return None;
                    }
                    l[i][i] = v.sqrt();
                } else {
                    l[i][j] = v / l[j][j];
                }
            }
        }
        let logdet = 2.0 * (0..DIM).map(|i| l[i][i].ln()).sum::<f64>();
        Some(Gaussian {
            mean: s.mean(),
            chol: l,
            logdet,
        })
    }

    /// The log-likelihood of all frames of `s` under this Gaussian (up to the constant
    /// `-n d/2 log 2 pi`): `-n/2 log|C| - 1/2 tr(C^-1 S)` with S the scatter about this mean.
    pub fn loglik(&self, s: &Stats) -> f64 {
        if s.n <= 0.0 {
            return 0.0;
        }
        // Scatter about self.mean: outer - mean sum^T - sum mean^T + n mean mean^T.
        let mut scatter = [[0.0; DIM]; DIM];
        let mut k = 0;
        for i in 0..DIM {
            for j in i..DIM {
                let v = s.outer[k] - self.mean[i] * s.sum[j] - s.sum[i] * self.mean[j]
                    + s.n * self.mean[i] * self.mean[j];
                scatter[i][j] = v;
                scatter[j][i] = v;
                k += 1;
            }
        }
        // tr(C^-1 S) = sum over columns of S of x^T C^-1 x-like terms: solve L Y = S, then
        // tr(L^-T L^-1 S) = ||L^-1 S^(1/2)||^2; computed as tr(L^-1 S L^-T).
        let mut y = scatter; // Y = L^-1 S
        for col in 0..DIM {
            for i in 0..DIM {
                let mut v = y[i][col];
                for p in 0..i {
                    v -= self.chol[i][p] * y[p][col];
                }
                y[i][col] = v / self.chol[i][i];
            }
        }
        // Z = Y L^-T, i.e. Z^T = L^-1 Y^T; only the diagonal of Z is needed.
        let mut trace = 0.0;
        for r in 0..DIM {
            let mut z = [0.0; DIM];
            for i in 0..DIM {
                let mut v = y[r][i];
                for p in 0..i {
                    v -= self.chol[i][p] * z[p];
                }
                z[i] = v / self.chol[i][i];
            }
            trace += z[r];
        }
        -0.5 * (s.n * self.logdet + trace)
    }
}

/// A segment of `frames` frames of a synthetic voice: coefficients around `centre` with a
/// voice-specific spread, from a seeded generator (the clustering's tests).
#[cfg(test)]
pub fn synthetic(voice: usize, frames: usize, seed: u64) -> Stats {
    let mut s = Stats::default();
    let mut x = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    for _ in 0..frames {
        let mut f = [0.0; DIM];
        for (i, v) in f.iter_mut().enumerate() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let centre = ((voice * 7 + i * 3) % 5) as f64 * 1.5;
            *v = centre + u * (2.0 + voice as f64 * 0.5);
        }
        s.add(&f);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(seed: &mut u64, scale: f64, shift: f64) -> [f64; DIM] {
        let mut x = [0.0; DIM];
        for (i, v) in x.iter_mut().enumerate() {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = ((*seed >> 11) as f64) / (1u64 << 53) as f64;
            *v = (u - 0.5) * scale * (1.0 + i as f64 * 0.1) + shift;
        }
        x
    }

    #[test]
    fn the_loglik_from_statistics_equals_the_sum_over_frames() {
        let mut seed = 7;
        let mut all = Stats::default();
        let frames: Vec<_> = (0..300).map(|_| sample(&mut seed, 2.0, 0.3)).collect();
        frames.iter().for_each(|x| all.add(x));
        let g = Gaussian::from(&all, &all.plain_covariance(), 0.0).expect("invertible");
        let mut part = Stats::default();
        frames[..50].iter().for_each(|x| part.add(x));
        // Direct: sum of -1/2 (logdet + (x-m)^T C^-1 (x-m)) with C^-1 from the Cholesky factor.
        let mut direct = 0.0;
        for x in &frames[..50] {
            let mut one = Stats::default();
            one.add(x);
            direct += g.loglik(&one);
        }
        assert!((direct - g.loglik(&part)).abs() < 1e-6 * direct.abs().max(1.0));
        // A frame at the mean scores -logdet/2 exactly.
        let mut at_mean = Stats::default();
        at_mean.add(&all.mean());
        assert!((g.loglik(&at_mean) + 0.5 * g.logdet).abs() < 1e-9);
    }
}
