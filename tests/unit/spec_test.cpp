#include <doctest/doctest.h>

#include "fajit/kernel_spec.hpp"
#include "spec/arch.hpp"
#include "spec/comma_list.hpp"

using namespace fajit;

TEST_CASE("canonical spec text round-trips through parse and print") {
    for (const char* text :
         {"family=scalar,d=128,dtype=f16,bq=4,bk=64,waves=4,margin=10,causal=bottom-right,arch=gfx1151",
          "family=scalar,d=72,dtype=bf16,bq=8,bk=32,waves=2,margin=0.5,causal=top-left,arch=sm_90a",
          "family=scalar,d=16,dtype=f32,bq=1,bk=64,waves=1,margin=0,causal=none,arch=gfx90a:sramecc+:xnack-",
          "family=wmma-gfx11,d=128,dtype=f16,bq=64,bk=64,waves=4,margin=10,causal=bottom-right,arch=gfx1100"}) {
        const auto parsed = parse_spec(text);
        REQUIRE_MESSAGE(parsed.spec, parsed.error);
        CHECK(to_string(*parsed.spec) == text);
        CHECK(parse_spec(to_string(*parsed.spec)).spec == parsed.spec);
    }
}

TEST_CASE("batched layouts read and print kv and page; dense specs print neither") {
    for (const char* text :
         {"family=scalar,d=64,dtype=f16,bq=4,bk=64,waves=4,margin=10,causal=none,kv=ragged,arch=sm_90a",
          "family=scalar,d=64,dtype=f16,bq=4,bk=64,waves=4,margin=10,causal=bottom-right,kv=paged,"
          "page=16,arch=gfx1151"}) {
        const auto parsed = parse_spec(text);
        REQUIRE_MESSAGE(parsed.spec, parsed.error);
        CHECK(to_string(*parsed.spec) == text);
    }
    const auto paged = parse_spec("family=scalar,d=64,dtype=f16,kv=paged,page=1,arch=sm_90a");
    REQUIRE(paged.spec);
    CHECK(paged.spec->kv_layout == KvLayout::paged);
    CHECK(paged.spec->page_size == 1);
    const auto dense = parse_spec("family=scalar,d=64,dtype=f16,kv=dense,arch=sm_90a");
    REQUIRE(dense.spec);
    CHECK(to_string(*dense.spec).find("kv=") == std::string::npos);
}

TEST_CASE("model features read and print only when on, each its own kernel") {
    const char* text =
        "family=mma-sm80,d=256,dtype=bf16,bq=64,bk=32,waves=4,margin=10,causal=bottom-right,window=1,softcap=1,"
        "sinks=1,arch=sm_90a";
    const auto parsed = parse_spec(text);
    REQUIRE_MESSAGE(parsed.spec, parsed.error);
    CHECK(parsed.spec->window);
    CHECK(parsed.spec->softcap);
    CHECK(parsed.spec->sinks);
    CHECK(to_string(*parsed.spec) == text);
    const auto off = parse_spec("family=scalar,d=64,dtype=f16,window=0,softcap=0,sinks=0,arch=sm_90a");
    REQUIRE(off.spec);
    CHECK_FALSE(off.spec->window);
    CHECK(to_string(*off.spec).find("window") == std::string::npos);
    KernelSpec one = *off.spec;
    for (bool KernelSpec::*feature : {&KernelSpec::window, &KernelSpec::softcap, &KernelSpec::sinks}) {
        KernelSpec with = one;
        with.*feature = true;
        CHECK(to_string(with) != to_string(one));
        CHECK(parse_spec(to_string(with)).spec == with);
    }
}

TEST_CASE("dv reads and prints only where it differs from d, in every family") {
    const char* text =
        "family=wgmma-sm90,d=192,dv=128,dtype=bf16,bq=128,bk=128,waves=8,margin=10,causal=bottom-right,"
        "arch=sm_90a";
    const auto parsed = parse_spec(text);
    REQUIRE_MESSAGE(parsed.spec, parsed.error);
    CHECK(parsed.spec->head_dim_v == 128);
    CHECK(value_head_dim(*parsed.spec) == 128);
    CHECK(to_string(*parsed.spec) == text);
    // dv equal to d is the plain kernel, in its one canonical form.
    const auto same = parse_spec("family=scalar,d=64,dv=64,dtype=f16,arch=sm_90a");
    REQUIRE_MESSAGE(same.spec, same.error);
    CHECK(same.spec->head_dim_v == 0);
    CHECK(value_head_dim(*same.spec) == 64);
    CHECK(to_string(*same.spec).find("dv=") == std::string::npos);
    CHECK(*same.spec == *parse_spec("family=scalar,d=64,dtype=f16,arch=sm_90a").spec);
    const auto error_of = [](const std::string& spec) { return parse_spec(spec).error; };
    CHECK(error_of("family=scalar,d=64,dv=60,dtype=f16,arch=sm_90a").find("dv=60") == 0);
    CHECK(error_of("family=scalar,d=64,dv=x,dtype=f16,arch=sm_90a").find("dv=x") == 0);
    CHECK(error_of("family=mma-sm80,d=192,dv=128,dtype=f16,arch=sm_80").empty());
    CHECK(error_of("family=wmma-gfx11,d=192,dv=128,dtype=f16,arch=gfx1151").empty());
    CHECK(error_of("family=decode-mma,d=192,dv=128,dtype=f16,arch=sm_90a").empty());
    CHECK(error_of("family=decode-split,d=192,dv=128,dtype=f16,bq=1,arch=gfx942").empty());
    // decode-split's outputs per lane count V's head dim: 16 rows x 256 / 32 lanes is 128.
    CHECK(error_of("family=decode-split,d=64,dv=256,dtype=f16,bq=16,arch=sm_90a").find("bq=16") == 0);
    KernelSpec struct_form = *parsed.spec;
    struct_form.head_dim_v = struct_form.head_dim;  // only text normalizes; a struct must leave it 0
    CHECK(validate(struct_form).find("dv=192") == 0);
}

TEST_CASE("e4m3 specs name O's dtype, and only they do") {
    const char* text = "family=scalar,d=128,dtype=e4m3,out=bf16,bq=4,bk=64,waves=4,margin=6,causal=none,arch=sm_90a";
    const auto parsed = parse_spec(text);
    REQUIRE_MESSAGE(parsed.spec, parsed.error);
    CHECK(parsed.spec->dtype == DType::e4m3);
    CHECK(output_dtype(*parsed.spec) == DType::bf16);
    CHECK(to_string(*parsed.spec) == text);
    const auto error_of = [](const std::string& spec) { return parse_spec(spec).error; };
    CHECK(error_of("family=scalar,d=128,dtype=e4m3,arch=sm_90a").find("out=none: dtype e4m3 needs") == 0);
    CHECK(error_of("family=scalar,d=128,dtype=e4m3,out=f32,arch=sm_90a").find("out=f32") == 0);
    CHECK(error_of("family=scalar,d=128,dtype=e4m3,out=e4m3,arch=sm_90a").find("out=e4m3") == 0);
    CHECK(error_of("family=scalar,d=128,dtype=e4m3,out=x,arch=sm_90a").find("out=x: expected f16 or bf16") == 0);
    CHECK(error_of("family=scalar,d=128,dtype=f16,out=bf16,arch=sm_90a").find("out=bf16: only dtype e4m3") == 0);
    // Families without e4m3 say which dtypes they take.
    CHECK(error_of("family=mma-sm80,d=128,dtype=e4m3,out=f16,arch=sm_90a").find("dtype=e4m3") == 0);
    CHECK(error_of("family=wmma-gfx11,d=128,dtype=e4m3,out=f16,arch=gfx1151").find("dtype=e4m3") == 0);
}

TEST_CASE("parse accepts any field order and fills tile defaults") {
    const auto parsed = parse_spec("arch=sm_80,dtype=bf16,d=64,family=scalar");
    REQUIRE_MESSAGE(parsed.spec, parsed.error);
    CHECK(parsed.spec->arch == "sm_80");
    CHECK(parsed.spec->block_k == 64);
    CHECK(parsed.spec->causal == CausalMode::none);
}

TEST_CASE("comma lists: every comma ends an item, a trailing one adds none") {
    using Items = std::vector<std::string_view>;
    CHECK(comma_list_items("") == Items{});
    CHECK(comma_list_items("a") == Items{"a"});
    CHECK(comma_list_items("d=64,dtype=f16") == Items{"d=64", "dtype=f16"});
    CHECK(comma_list_items("a,") == Items{"a"});
    CHECK(comma_list_items(",") == Items{""});
    CHECK(comma_list_items("a,,b") == Items{"a", "", "b"});
    // A spec with an empty item is refused, naming what it got.
    const auto parsed = parse_spec("family=scalar,,d=64,dtype=f16,arch=sm_80");
    CHECK_FALSE(parsed.spec);
    CHECK(parsed.error == "spec: expected name=value, got ''");
}

TEST_CASE("arch keeps its feature suffix whole, even with commas elsewhere") {
    const auto parsed = parse_spec("family=scalar,d=64,dtype=f16,arch=gfx942:sramecc+:xnack-");
    REQUIRE(parsed.spec);
    CHECK(parsed.spec->arch == "gfx942:sramecc+:xnack-");
    CHECK(processor_of(parsed.spec->arch) == "gfx942");
    CHECK(wave_size("gfx942:sramecc+:xnack-") == 64);
    CHECK(wave_size("gfx1151") == 32);
    CHECK(wave_size("sm_90a") == 32);
    CHECK(is_gfx11("gfx1151"));
    CHECK_FALSE(is_gfx11("gfx1030"));
}

TEST_CASE("target names: an AMD processor of the table with the features it takes, in order; an NVIDIA sm_ number") {
    for (const char* arch :
         {"gfx1151", "gfx1030", "gfx900:xnack+", "gfx942:sramecc+", "gfx942:xnack-", "gfx90a:sramecc-:xnack+",
          "gfx1010:xnack-", "sm_50", "sm_80", "sm_90a", "sm_120", "sm_100a"})
        CHECK_MESSAGE(target_name_error(arch).empty(), arch, ": ", target_name_error(arch));
    const std::pair<const char*, const char*> rejected[] = {
        // Each of these aborted the process inside the AMD compiler library.
        {"gfx9999", "not an AMD processor fa-jit compiles for; expected one of gfx900, gfx902"},
        {"gfx90", "not an AMD processor"},
        {"gfx803", "not an AMD processor"},
        {"gfx1151:foo+", "gfx1151 takes no target features"},
        {"gfx1151:xnack-", "gfx1151 takes no target features"},
        {"gfx942:sramec+", "gfx942 takes the target features sramecc, xnack, each at most once, in that order"},
        {"gfx942:sramecc", "gfx942 takes the target features"},
        {"gfx942:sramecc+:", "gfx942 takes the target features"},
        {"gfx942:sramecc+:sramecc-", "gfx942 takes the target features"},
        {"gfx942:xnack-:sramecc+", "in that order"},
        {"gfx900:sramecc+", "gfx900 takes the target features xnack,"},
        {"sm_9x", "expected sm_ and a compute capability from 50"},
        {"sm_35", "from 50"},
        {"sm_080", "from 50"},
        {"sm_1000", "from 50"},
        {"sm_-90", "from 50"},
        {"sm_80a", "architecture-specific target from sm_90 on"},
        {"sm_90b", "from 50"},
        {"x86", "must name an AMD (gfx...) or NVIDIA (sm_...) target"},
    };
    for (const auto& [arch, expected] : rejected)
        CHECK_MESSAGE(target_name_error(arch).find(expected) != std::string::npos, arch,
                      " gave: ", target_name_error(arch));
    // validate() holds every spec to it, so no caller reaches a compiler with a bad name.
    const auto parsed = parse_spec("family=scalar,d=64,dtype=f16,arch=gfx9999");
    CHECK_FALSE(parsed.spec);
    CHECK(parsed.error.starts_with("arch=gfx9999: not an AMD processor"));
}

TEST_CASE("invalid specs name the offending field and value") {
    const std::pair<const char*, const char*> cases[] = {
        {"family=scalar,d=12,dtype=f16,arch=gfx1151", "d=12"},
        {"family=scalar,d=264,dtype=f16,arch=gfx1151", "d=264"},
        {"family=scalar,d=64,dtype=f8,arch=gfx1151", "dtype=f8"},
        {"family=tensor,d=64,dtype=f16,arch=gfx1151", "family=tensor"},
        {"family=scalar,d=64,dtype=f16,arch=x86", "arch=x86"},
        {"family=scalar,d=64,dtype=f16,margin=-1,arch=gfx1151", "margin=-1"},
        {"family=scalar,d=64,dtype=f16,margin=nan,arch=gfx1151", "margin="},
        {"family=scalar,d=64,dtype=f16,waves=3,arch=gfx1151", "waves=3"},
        {"family=scalar,d=64,dtype=f16,bk=32,arch=gfx90a", "bk=32"},
        {"family=scalar,d=64,dtype=f16,bq=6,waves=4,arch=gfx1151", "bq=6"},
        {"family=scalar,d=64,dtype=f16,causal=diagonal,arch=gfx1151", "causal=diagonal"},
        {"family=scalar,d=sixty,dtype=f16,arch=gfx1151", "d=sixty"},
        {"family=scalar,d=64,dtype=f16,colour=red,arch=gfx1151", "colour=red"},
        {"family=scalar,d=64,d=64,dtype=f16,arch=gfx1151", "d: given twice"},
        {"family=scalar,d=64,dtype=f16,window=yes,arch=gfx1151", "window=yes: expected 0 or 1"},
        {"family=scalar,d=64,dtype=f16,softcap=50,arch=gfx1151", "softcap=50: expected 0 or 1"},
        {"family=scalar,d=64,dtype=f16,sinks=2,arch=gfx1151", "sinks=2"},
        {"family=scalar,dtype=f16,arch=gfx1151", "d: missing (required fields: family, d, dtype, arch)"},
        {"family=wmma-gfx11,d=128,dtype=f16,bq=48,arch=gfx1151", "bq=48"},
        {"family=scalar,d=64,dtype=f16,kv=sparse,arch=gfx1151", "kv=sparse"},
        {"family=scalar,d=64,dtype=f16,kv=paged,arch=gfx1151", "page=0"},
        {"family=scalar,d=64,dtype=f16,kv=paged,page=24,arch=gfx1151", "page=24"},
        {"family=scalar,d=64,dtype=f16,kv=paged,page=512,arch=gfx1151", "page=512"},
        {"family=scalar,d=64,dtype=f16,kv=ragged,page=16,arch=gfx1151", "page=16"},
        {"family=scalar,d=64,dtype=f16,page=16,arch=gfx1151", "page=16"},
        {"family=wmma-gfx11,d=64,dtype=f32,arch=gfx1151", "dtype=f32"},
        {"family=wmma-gfx11,d=64,dtype=f16,arch=gfx90a", "arch=gfx90a"},
        {"family=wmma-gfx11,d=64,dtype=f16,margin=20,arch=gfx1151", "margin=20"},
    };
    for (const auto& [text, expected] : cases) {
        const auto parsed = parse_spec(text);
        CHECK_FALSE(parsed.spec);
        CHECK_MESSAGE(parsed.error.find(expected) != std::string::npos, text, " gave: ", parsed.error);
    }
}
