// Emits a kernel through the installed library: proves the headers, the shared
// library and the embedded templates all arrived.
#include <fajit/runtime.hpp>

#include <iostream>

int main() {
    const auto parsed = fajit::parse_spec("family=scalar,d=64,dtype=f16,arch=gfx1151");
    if (!parsed.spec) return 1;
    fajit::Options options;
    options.cache_disabled = true;
    fajit::Runtime runtime(options);
    const std::string source = runtime.emit(*parsed.spec);
    std::cout << "emitted " << source.size() << " bytes\n";
    return source.find("fa_scalar") == std::string::npos ? 1 : 0;
}
