//! Which code multiplies the encoder's dense layers: chosen at run time from what this CPU has, or named by the
//! caller (`GHOLA_EMBED_KERNEL`, read at the top), so that a slower path can be measured on a machine that has
//! a faster one.
//!
//! Order of preference: AMX bf16 tiles, AVX-512 BF16 dot products, AVX-512F f32, AVX2 16-bit integers, AVX2+FMA
//! f32, and candle's own product (the `gemm` crate; Accelerate on macOS), which runs everywhere. The bf16 and
//! integer kernels round the activations and weights and accumulate exactly enough for a cosine ≥ 0.999 to
//! sentence-transformers' vectors; the f32 ones give them to 1.000000. Every kernel but the last is checked
//! against candle's product on the first layer when the model loads (`Bert::use_kernel` in `embed/bert.rs`);
//! one that disagrees is dropped for the next in line, with a warning, so that a kernel never gives wrong
//! vectors on a CPU it was not tested on.

use std::fmt;
use std::str::FromStr;

/// A dense-layer kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Intel AMX tiles, bf16 in, f32 accumulation (Sapphire Rapids and later Xeons, Linux).
    AmxBf16,
    /// `vdpbf16ps`, bf16 pairs in, f32 accumulation (AMD Zen 4 and 5, Intel Cooper Lake and Sapphire Rapids on).
    Avx512Bf16,
    /// AVX-512F f32 fused multiply-adds, weights packed at load.
    Avx512,
    /// AVX2 16-bit integer pairs (`vpmaddwd`), ~12 bits per activation and 13 per weight, f32 between slices:
    /// twice f32's multiply-adds per instruction where the CPU has two ports for it (AMD Zen 2 and 3).
    Avx2I16,
    /// AVX2 + FMA f32, weights packed at load (most x86-64 laptops and servers since 2013).
    Avx2,
    /// candle's product: the `gemm` crate's kernels (NEON on ARM), or Accelerate on macOS.
    Portable,
}

/// Every kernel, fastest first.
pub const ALL: [Kernel; 6] = [
    Kernel::AmxBf16,
    Kernel::Avx512Bf16,
    Kernel::Avx512,
    Kernel::Avx2I16,
    Kernel::Avx2,
    Kernel::Portable,
];

impl Kernel {
    /// The name `GHOLA_EMBED_KERNEL` and `ghola bench embed` use.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::AmxBf16 => "amx-bf16",
            Kernel::Avx512Bf16 => "avx512-bf16",
            Kernel::Avx512 => "avx512",
            Kernel::Avx2I16 => "avx2-i16",
            Kernel::Avx2 => "avx2",
            Kernel::Portable => "portable",
        }
    }

    /// Whether this CPU (and OS) can run it.
    pub fn runs_here(self) -> bool {
        match self {
            Kernel::AmxBf16 => super::amx::available(),
            Kernel::Avx512Bf16 => x86_has(&["avx512f", "avx512bf16"]),
            Kernel::Avx512 => x86_has(&["avx512f"]),
            Kernel::Avx2 | Kernel::Avx2I16 => x86_has(&["avx2", "fma"]),
            Kernel::Portable => true,
        }
    }

    /// Whether it multiplies in f32 (the reference arithmetic) rather than rounding to bf16 or integers.
    pub fn is_f32(self) -> bool {
        !matches!(self, Kernel::AmxBf16 | Kernel::Avx512Bf16 | Kernel::Avx2I16)
    }

    /// The fastest kernel this CPU runs.
    pub fn best() -> Kernel {
        ALL.into_iter()
            .find(|k| k.runs_here())
            .unwrap_or(Kernel::Portable)
    }

    /// The fastest f32 kernel this CPU runs.
    pub fn best_f32() -> Kernel {
        ALL.into_iter()
            .find(|k| k.is_f32() && k.runs_here())
            .unwrap_or(Kernel::Portable)
    }

    /// The kernel to fall back to when this one fails its check at load: the next one in line that runs here.
    pub fn next(self) -> Kernel {
        ALL.into_iter()
            .skip_while(|k| *k != self)
            .skip(1)
            .find(|k| k.runs_here())
            .unwrap_or(Kernel::Portable)
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel name that is not one of [`ALL`].
#[derive(Debug, Clone, thiserror::Error)]
#[error("no embedding kernel is called {given:?} (known: {})", ALL.map(Kernel::name).join(", "))]
pub struct UnknownKernel {
    pub given: String,
}

impl FromStr for Kernel {
    type Err = UnknownKernel;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().to_ascii_lowercase();
        ALL.into_iter()
            .find(|k| k.name() == s)
            .ok_or(UnknownKernel { given: s })
    }
}

/// What the caller asks for: the fastest kernel here, the fastest f32 one, or one by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KernelChoice {
    /// [`Kernel::best`].
    #[default]
    Fastest,
    /// [`Kernel::best_f32`]: the reference arithmetic.
    FastestF32,
    /// This one (if it does not run here, the fastest that does, with a warning).
    Named(Kernel),
}

impl KernelChoice {
    /// The kernel this choice gives on this CPU.
    pub fn resolve(self) -> Kernel {
        match self {
            KernelChoice::Fastest => Kernel::best(),
            KernelChoice::FastestF32 => Kernel::best_f32(),
            KernelChoice::Named(k) if k.runs_here() => k,
            KernelChoice::Named(k) => {
                let best = Kernel::best();
                tracing::warn!("embedding kernel {k} does not run on this CPU; using {best}");
                best
            }
        }
    }
}

fn x86_has(features: &[&str]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        features.iter().all(|f| match *f {
            "avx2" => std::arch::is_x86_feature_detected!("avx2"),
            "fma" => std::arch::is_x86_feature_detected!("fma"),
            "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
            "avx512bf16" => std::arch::is_x86_feature_detected!("avx512bf16"),
            _ => false,
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = features;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_say_what_is_known() {
        for k in ALL {
            assert_eq!(k.name().parse::<Kernel>().unwrap(), k);
        }
        assert_eq!(" AVX2 ".parse::<Kernel>().unwrap(), Kernel::Avx2);
        let e = "sse9".parse::<Kernel>().unwrap_err().to_string();
        assert!(e.contains("sse9") && e.contains("avx512-bf16"), "{e}");
    }

    #[test]
    fn the_chain_ends_at_the_portable_kernel_which_runs_everywhere() {
        assert!(Kernel::Portable.runs_here());
        assert!(Kernel::best().runs_here() && Kernel::best_f32().is_f32());
        for k in ALL {
            let next = k.next();
            assert!(next.runs_here());
            assert!(
                ALL.iter().position(|x| *x == next) > ALL.iter().position(|x| *x == k)
                    || next == Kernel::Portable
            );
        }
        assert_eq!(
            KernelChoice::Named(Kernel::Portable).resolve(),
            Kernel::Portable
        );
    }
}
