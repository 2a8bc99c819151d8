//! The C suite's malformed arguments and settings (tests/capi/capi_arguments_test.c),
//! through the safe API: each gives its status and a message naming the field, from
//! attention() and selected_variant() alike. Cases the types rule out (an unknown dtype,
//! causal mode or layout; a null struct, runtime, spec or setting name; a wrong
//! struct_size; ragged offsets on a paged call; batched fields on a dense one) cannot be
//! written here; fajit-sys's tests cover the struct size. Needs no GPU: the addresses are
//! never dereferenced.
use fajit::{Attention, Causal, DType, Error, Paged, Ragged, Runtime, Shape, Status, Strides};

const SHAPE: Shape = Shape {
    batch: 2,
    heads_q: 8,
    heads_kv: 2,
    len_q: 16,
    len_k: 32,
    head_dim: 64,
};

fn runtime() -> Runtime {
    Runtime::new(&[("FAJIT_CACHE_DISABLE", "1"), ("FAJIT_LOG_LEVEL", "error")]).expect("a runtime")
}

/// The C suite's tensor addresses.
fn with_tensors(call: Attention) -> Attention {
    call.q(0x100000).k(0x200000).v(0x300000).o(0x400000)
}

/// The C suite's dense strides (B=2, Hq=8, Hkv=2, Lq=16, Lk=32, D=64).
fn with_valid_strides(call: Attention) -> Attention {
    let q = Strides::contiguous(8, 16, 64);
    let kv = Strides::contiguous(2, 32, 64);
    call.q_strides(q).o_strides(q).k_strides(kv).v_strides(kv)
}

/// The C suite's valid call with `shape` in place of its own; strides stay the valid ones.
fn valid_with(shape: Shape) -> Attention {
    let call = with_valid_strides(with_tensors(Attention::dense(DType::F16, shape)));
    call.lse(0x500000, [2, 8, 16]).causal(Causal::BottomRight).scale(0.125)
}

fn valid() -> Attention {
    valid_with(SHAPE)
}

fn with(change: impl Fn(&mut Shape)) -> Attention {
    let mut shape = SHAPE;
    change(&mut shape);
    valid_with(shape)
}

/// The C suite's consistent paged call.
fn paged(change: impl Fn(&mut Paged)) -> Attention {
    let mut layout = Paged {
        cu_seqlens_q: 0x600000,
        block_table: 0x700000,
        kv_lens: 0x800000,
        total_q: 32,
        max_pages_per_seq: 4,
        num_pages: 64,
        page_size: 16,
    };
    change(&mut layout);
    with_tensors(Attention::paged(DType::F16, SHAPE, layout))
        .lse(0x500000, [1, 8, 32])
        .causal(Causal::BottomRight)
}

fn cases() -> Vec<(&'static str, Attention, &'static str)> {
    let q = Strides::contiguous(8, 16, 64);
    let kv = Strides::contiguous(2, 32, 64);
    vec![
        ("null q", valid().q(0), "q=null"),
        ("null k", valid().k(0), "k=null"),
        ("null v", valid().v(0), "v=null"),
        ("null o", valid().o(0), "o=null"),
        ("zero batch", with(|s| s.batch = 0), "batch=0"),
        ("negative batch", with(|s| s.batch = -1), "batch=-1"),
        ("zero heads_q", with(|s| s.heads_q = 0), "heads_q=0"),
        ("zero heads_kv", with(|s| s.heads_kv = 0), "heads_kv=0"),
        ("zero len_q", with(|s| s.len_q = 0), "len_q=0"),
        ("negative len_k", with(|s| s.len_k = -5), "len_k=-5"),
        ("zero head_dim", with(|s| s.head_dim = 0), "head_dim=0"),
        (
            "heads_q not a multiple of heads_kv",
            with(|s| s.heads_kv = 3),
            "heads_q=8: must be a multiple of heads_kv (3)",
        ),
        ("head_dim too large", with(|s| s.head_dim = 300), "head_dim=300"),
        ("head_dim not a multiple of 8", with(|s| s.head_dim = 60), "head_dim=60"),
        ("head_dim too small", with(|s| s.head_dim = 8), "head_dim=8"),
        ("heads_q beyond the grid", with(|s| s.heads_q = 70000), "heads_q=70000"),
        (
            "batch beyond the grid",
            // No LSE: its shape would be wrong first.
            with_valid_strides(with_tensors(Attention::dense(
                DType::F16,
                Shape { batch: 70000, ..SHAPE },
            ))),
            "batch=70000",
        ),
        ("infinite scale", valid().scale(f32::INFINITY), "scale=inf"),
        ("NaN scale", valid().scale(f32::NAN), "scale=nan"),
        ("negative device", valid().device(-1), "device=-1"),
        ("misaligned q", valid().q(0x100001), "q=0x100001"),
        ("misaligned o", valid().o(0x400003), "o=0x400003"),
        (
            "f32 k on a 2-byte boundary",
            with_valid_strides(with_tensors(Attention::dense(DType::F32, SHAPE)))
                .k(0x200002)
                .lse(0x500000, [2, 8, 16])
                .causal(Causal::BottomRight),
            "k=0x200002",
        ),
        ("misaligned lse", valid().lse(0x500002, [2, 8, 16]), "lse=0x500002"),
        (
            "lse shape of the wrong length",
            valid().lse(0x500000, [2, 8, 15]),
            "lse_shape={2,8,15}",
        ),
        (
            "lse shape with kv heads",
            valid().lse(0x500000, [2, 2, 16]),
            "lse_shape={2,2,16}",
        ),
        (
            "lse shape without lse",
            valid().lse(0, [2, 8, 16]),
            "lse_shape={2,8,16}: given without an lse buffer",
        ),
        (
            "negative q head stride",
            valid().q_strides(Strides { head: -1, ..q }),
            "q_strides.head=-1",
        ),
        (
            "overlapping k rows",
            valid().k_strides(Strides { sequence: 3, ..kv }),
            "k_strides.sequence=3",
        ),
        (
            "overlapping v heads",
            valid().v_strides(Strides { head: 32, ..kv }),
            "v_strides.head=32",
        ),
        (
            "o rows written twice",
            valid().o_strides(Strides { sequence: 0, ..q }),
            "o_strides.sequence=0",
        ),
        (
            "o heads written twice",
            valid().o_strides(Strides { head: 0, ..q }),
            "o_strides.head=0",
        ),
        (
            "v offsets overflow",
            valid().v_strides(Strides {
                batch: i64::MAX - 10,
                ..kv
            }),
            "v_strides={",
        ),
        (
            "q offsets overflow",
            valid().q_strides(Strides {
                sequence: i64::MAX / 8,
                ..q
            }),
            "q_strides={",
        ),
        (
            "paged without cu_seqlens_q",
            paged(|p| p.cu_seqlens_q = 0),
            "cu_seqlens_q=null",
        ),
        (
            "paged without a block table",
            paged(|p| p.block_table = 0),
            "block_table=null",
        ),
        (
            "paged without kv_lens",
            paged(|p| p.kv_lens = 0),
            "kv_lens=null",
        ),
        (
            "page size not a power of two",
            paged(|p| p.page_size = 48),
            "page_size=48",
        ),
        (
            "paged cache of no pages",
            paged(|p| p.num_pages = 0),
            "num_pages=0",
        ),
        (
            "pages per sequence too few for len_k",
            paged(|p| p.max_pages_per_seq = 1),
            "len_k=32: more keys than",
        ),
        (
            "misaligned block table",
            paged(|p| p.block_table = 0x700002),
            "block_table=0x700002",
        ),
        (
            "window left extent below -1",
            valid().window(-2, 0),
            "window_left=-2",
        ),
        (
            "window right extent below -1",
            valid().window(0, -7),
            "window_right=-7",
        ),
        ("negative softcap", valid().softcap(-1.0), "softcap=-1"),
        ("NaN softcap", valid().softcap(f32::NAN), "softcap=nan"),
        ("misaligned sinks", valid().sinks(0x900002), "sinks=0x900002"),
        (
            "descale factors for f16 inputs",
            valid().descale(0x900000, 0, 0, 1),
            "q_descale=0x900000: only e4m3 inputs",
        ),
        (
            "o dtype for f16 inputs",
            valid().output_dtype(DType::Bf16),
            "o_dtype=bf16: only e4m3 inputs take one",
        ),
        (
            "V head dim not a multiple of 8",
            valid().value_head_dim(12),
            "head_dim_v=12",
        ),
        (
            "ragged without key offsets",
            with_tensors(Attention::ragged(
                DType::F16,
                SHAPE,
                Ragged {
                    cu_seqlens_q: 0x600000,
                    cu_seqlens_k: 0,
                    total_q: 32,
                    total_k: 0,
                },
            ))
            .lse(0x500000, [1, 8, 32]),
            "cu_seqlens_k=null",
        ),
    ]
}

fn expect(what: &str, result: Result<impl std::fmt::Debug, Error>, status: Status, needle: &str) {
    match result {
        Ok(value) => panic!("{what}: succeeded ({value:?}), want {status:?} containing {needle:?}"),
        Err(error) => {
            assert_eq!(error.status, status, "{what}: {error}");
            assert!(
                error.message.contains(needle),
                "{what}: {:?} lacks {needle:?}",
                error.message
            );
        }
    }
}

#[test]
fn malformed_arguments_name_their_field() {
    let runtime = runtime();
    let cases = cases();
    for (what, call, needle) in &cases {
        expect(
            what,
            runtime.attention(call, std::ptr::null_mut()),
            Status::InvalidArgument,
            needle,
        );
        expect(what, runtime.selected_variant(call), Status::InvalidArgument, needle);
    }
    println!(
        "{} malformed argument sets, each through attention and selected_variant",
        cases.len()
    );
}

#[test]
fn malformed_settings_name_their_setting() {
    for (name, value, needle) in [
        ("FAJIT_TILE", "bq=x", "FAJIT_TILE=bq=x"),
        ("FAJIT_FAMILY", "wmma-gfx12", "FAJIT_FAMILY=wmma-gfx12"),
        ("FAJIT_STRICT", "2", "FAJIT_STRICT=2"),
        ("FAJIT_TURBO", "1", "FAJIT_TURBO=1: not a fa-jit setting"),
    ] {
        expect(
            name,
            Runtime::new(&[(name, value)]).map(|_| ()),
            Status::InvalidOption,
            needle,
        );
    }
    expect(
        "a NUL in a value",
        Runtime::new(&[("FAJIT_TILE", "bq=\0")]).map(|_| ()),
        Status::InvalidArgument,
        "FAJIT_TILE",
    );
}

#[test]
fn warm_names_the_spec_it_refuses() {
    let runtime = runtime();
    expect(
        "spec missing its arch",
        runtime.warm(&["family=scalar,d=64,dtype=f16"]),
        Status::InvalidArgument,
        "specs[0]=\"family=scalar,d=64,dtype=f16\": arch: missing",
    );
    expect(
        "spec the family cannot run",
        runtime.warm(&["family=wmma-gfx11,d=128,dtype=f16,bq=48,arch=gfx1151"]),
        Status::InvalidArgument,
        "bq=48: family wmma-gfx11 needs 16 query rows per wave",
    );
}

#[test]
fn version_is_the_library_s() {
    assert!(!fajit::version().is_empty());
    assert!(
        fajit::version().chars().next().unwrap().is_ascii_digit(),
        "{}",
        fajit::version()
    );
}
