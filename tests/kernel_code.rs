//! The machine code of the embedding kernels (and the search's vector scan), read back from the built `ghola` with `objdump`.
//!
//! Many kernels cannot run on the machine a test runs on (AVX-512 and AVX-512 BF16 are chosen on AMD Zen 4 and
//! recent Intel Xeons; some of this project's machines have AVX2 only), so their speed cannot always be
//! measured and their emulated tests say nothing about how they were compiled. Their shape can be checked on
//! any x86-64 machine: each kernel's step
//! must be one function compiled for its instructions, with those instructions inline. The AVX-512 kernels
//! once shipped with every `vdpbf16ps` and every FMA in a function of its own, called once per instruction
//! (the step sat in a closure of a function without the target feature, where nothing could inline): correct
//! vectors, a fraction of the speed, and nothing here noticed.
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use std::process::Command;
use std::sync::OnceLock;

/// The disassembly of the `ghola` this test was built with, names demangled: made once for both tests (~8 s
/// for a 170 MB binary).
fn disassembly() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(disassemble)
}

fn disassemble() -> String {
    let out = Command::new("objdump")
        .args([
            "-d",
            "--no-show-raw-insn",
            "-C",
            env!("CARGO_BIN_EXE_ghola"),
        ])
        .output()
        .expect("objdump (binutils) runs; .ci/run installs it");
    assert!(
        out.status.success(),
        "objdump failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("objdump prints text")
}

/// Each function's name and its instructions, with their addresses.
fn functions(asm: &str) -> Vec<(&str, Vec<(u64, &str)>)> {
    let mut all: Vec<(&str, Vec<(u64, &str)>)> = Vec::new();
    for line in asm.lines() {
        if let Some(name) = line
            .strip_suffix(">:")
            .and_then(|l| l.split_once(" <"))
            .map(|(_, n)| n)
        {
            all.push((name, Vec::new()));
        } else if let (Some((_, body)), Some((at, instruction))) =
            (all.last_mut(), line.split_once(":\t"))
            && let Ok(at) = u64::from_str_radix(at.trim(), 16)
        {
            body.push((at, instruction.trim()));
        }
    }
    all
}

/// The innermost loops of a function: the instructions from a backward jump's target to the jump, with no other
/// jump between.
fn loops<'a>(body: &'a [(u64, &'a str)]) -> Vec<&'a [(u64, &'a str)]> {
    let mut found = Vec::new();
    for (end, (at, instruction)) in body.iter().enumerate() {
        let target = instruction
            .strip_prefix('j')
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|t| u64::from_str_radix(t, 16).ok());
        if let Some(target) = target.filter(|t| t < at)
            && let Some(start) = body.iter().position(|(a, _)| *a == target)
            && !body[start..end].iter().any(|(_, i)| i.starts_with('j'))
        {
            found.push(&body[start..=end]);
        }
    }
    found
}

/// How many instructions starting with `mnemonic` and naming a `register`-class register the functions whose
/// name contains one of `names` (separated by `|`) hold, together.
fn count(fns: &[(&str, Vec<(u64, &str)>)], names: &str, mnemonic: &str, register: &str) -> usize {
    fns.iter()
        .filter(|(n, _)| names.split('|').any(|name| n.contains(name)))
        .flat_map(|(_, body)| body)
        .filter(|(_, i)| i.starts_with(mnemonic) && i.contains(register))
        .count()
}

#[test]
fn each_kernel_step_is_compiled_whole_for_its_instructions() {
    let fns = functions(disassembly());
    assert!(
        fns.iter().any(|(n, _)| n.contains("ghola_embed::")),
        "no symbols in the binary: this test needs them (the release and dist profiles keep them)"
    );

    // No lane operation is ever called: they exist to be inlined into a step compiled for them.
    let lane_ops = [
        "::load",
        "::store",
        "::splat",
        "::mul_add",
        "::dot",
        "::load_f",
        "::store_f",
        "::load_pairs",
        "::splat_pair",
    ];
    let calls: Vec<&str> = fns
        .iter()
        .flat_map(|(_, body)| body)
        .map(|(_, i)| *i)
        .filter(|i| i.starts_with("call") && i.contains("Lanes>"))
        .filter(|i| lane_ops.iter().any(|op| i.ends_with(&format!("{op}>"))))
        .collect();
    assert!(
        calls.is_empty(),
        "{} calls of lane operations out of line, e.g. {:#?}",
        calls.len(),
        &calls[..calls.len().min(3)]
    );

    // Each step, for every row count it is built for, has its multiply-adds inline: two registers of outputs
    // per row, so at least 2 · (1 + … + rows) of them.
    let rows = |r: usize| 2 * r * (r + 1) / 2;
    for (function, mnemonic, register, at_least) in [
        (
            "bf16_step_avx512|dense::x86::bf16_avx512|Avx512Bf16 as ghola_embed::dense::Bf16Lanes>::tile",
            "vdpbf16ps",
            "zmm",
            rows(12),
        ),
        (
            "f32_step_avx512|dense::x86::f32_avx512|Avx512F32 as ghola_embed::dense::F32Lanes>::tile",
            "vfmadd",
            "zmm",
            rows(12),
        ),
        (
            "f32_step_avx2|dense::x86::f32_avx2|Avx2F32 as ghola_embed::dense::F32Lanes>::tile",
            "vfmadd",
            "ymm",
            rows(6),
        ),
        // The 16-bit step is a function with the feature itself, inlined or not into its caller.
        (
            "ghola_embed::dense::x86::tile_i16|ghola_embed::dense::x86::i16_avx2",
            "vpmaddwd",
            "ymm",
            rows(6),
        ),
        (
            "Bf16Lanes>::to_pairs|ghola_embed::dense::x86::bf16_avx512",
            "vcvtne2ps2bf16",
            "zmm",
            1,
        ),
        ("ghola_embed::attention::attend_avx512", "vfmadd", "zmm", 16),
        ("ghola_embed::attention::attend_avx2", "vfmadd", "ymm", 16),
        // Scores (4 queries × 2 + 1 key blocks) and weighted sums (4 queries × 2 or 4 registers), D = 32 and 64.
        (
            "ghola_embed::attention::attend_bf16_avx512",
            "vdpbf16ps",
            "zmm",
            2 * 12 + 8 + 16,
        ),
        ("ghola_embed::amx::imp::product", "tdpbf16ps", "tmm", 1),
        // The search's vector scan: the int8 and the 4-bit dot products inline and whole (12 steps of 32 bytes
        // each; the compiler's own loop widened every byte to 32 bits and took a fifth longer).
        ("ghola::search::scan::scan_avx2", "vpmaddubsw", "ymm", 24),
    ] {
        let found = count(&fns, function, mnemonic, register);
        assert!(
            found >= at_least,
            "{function}: {found} {mnemonic} on {register} registers, expected at least {at_least}"
        );
    }
}

/// The dense steps read their operands through pointers and keep their sums in registers: a vector register
/// moved to or from the stack inside a loop that multiplies is a spilled accumulator, a load and a store on
/// every multiply-add's critical path. (The twelve row counts of a step once compiled as one function kept one
/// accumulator of the 6-row AVX2 step on the stack: 24 texts/s instead of 41.)
#[test]
fn the_dense_steps_keep_their_sums_in_registers() {
    let fns = functions(disassembly());
    let dense = ["dense::x86::", "Lanes>::tile"];
    let mut looked = 0;
    for (name, body) in fns
        .iter()
        .filter(|(n, _)| dense.iter().any(|d| n.contains(d)))
    {
        for l in loops(body) {
            let multiplies = l
                .iter()
                .filter(|(_, i)| {
                    ["vfmadd", "vdpbf16ps", "vpmaddwd"]
                        .iter()
                        .any(|m| i.starts_with(m))
                })
                .count();
            if multiplies < 2 {
                continue;
            }
            looked += 1;
            let spills: Vec<&str> = l
                .iter()
                .map(|(_, i)| *i)
                .filter(|i| i.contains("(%rsp") && (i.contains("%ymm") || i.contains("%zmm")))
                .collect();
            assert!(
                spills.is_empty(),
                "{name}: a multiplying loop moves vectors through the stack: {spills:#?}"
            );
        }
    }
    // The AVX2 f32 and 16-bit steps, the AVX-512 f32 and bf16 steps: several row counts each.
    assert!(
        looked >= 12,
        "only {looked} multiplying loops found in the dense kernels"
    );
}

/// The softmax's exponential and GELU run lane-wide in every attention kernel: no float is converted to an
/// integer one lane at a time. (`n as i32` in the exponential, whose saturating rule the compiler kept scalar,
/// once cost a compare, two conditional moves and a `vcvttss2si` per score: a third of the attention's time.)
#[test]
fn the_softmax_and_gelu_convert_lane_wide() {
    let fns = functions(disassembly());
    let mut looked = 0;
    for (name, body) in fns.iter().filter(|(n, _)| {
        n.contains("ghola_embed::attention::attend") || n.contains("ghola_embed::gelu::gelu_slice")
    }) {
        looked += 1;
        let scalar: Vec<&str> = body
            .iter()
            .map(|(_, i)| *i)
            .filter(|i| i.starts_with("vcvttss2si") || i.starts_with("vcvtss2si"))
            .collect();
        assert!(
            scalar.is_empty(),
            "{name}: {} scalar conversions of floats to integers, e.g. {:?}",
            scalar.len(),
            scalar.first()
        );
    }
    // The f32 attention for AVX2 and AVX-512, the bf16 one, and GELU's AVX2 loop.
    assert!(
        looked >= 4,
        "only {looked} attention and GELU functions found"
    );
}
