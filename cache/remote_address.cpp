#include <charconv>
#include <stdexcept>

#include "cache/remote_storage.hpp"

namespace fajit::cache {

namespace {

int parse_number(std::string_view text, std::string_view what, std::string_view whole, int low, int high) {
    int number = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty() || number < low || number > high)
        throw std::invalid_argument(std::string(whole) + ": " + std::string(what) + " '" + std::string(text) +
                                    "' is not a number from " + std::to_string(low) + " to " + std::to_string(high));
    return number;
}

}  // namespace

RemoteAddress parse_remote_address(std::string_view text) {
    constexpr std::string_view redis_scheme = "redis://";
    constexpr std::string_view unix_scheme = "unix://";
    constexpr std::string_view database_query = "?db=";
    RemoteAddress address;
    if (text.starts_with(unix_scheme)) {
        std::string_view rest = text.substr(unix_scheme.size());
        if (const auto query = rest.find(database_query); query != std::string_view::npos) {
            address.database = parse_number(rest.substr(query + database_query.size()), "database", text, 0, 1 << 20);
            rest = rest.substr(0, query);
        }
        if (!rest.starts_with('/'))
            throw std::invalid_argument(std::string(text) + ": expected an absolute socket path, unix:///path");
        address.socket_path = rest;
        return address;
    }
    if (!text.starts_with(redis_scheme))
        throw std::invalid_argument(std::string(text) + ": expected redis://host[:port][/db] or unix:///path[?db=N]");
    std::string_view rest = text.substr(redis_scheme.size());
    if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
        if (slash + 1 < rest.size())
            address.database = parse_number(rest.substr(slash + 1), "database", text, 0, 1 << 20);
        rest = rest.substr(0, slash);
    }
    if (const auto colon = rest.rfind(':'); colon != std::string_view::npos) {
        address.port = parse_number(rest.substr(colon + 1), "port", text, 1, 65535);
        rest = rest.substr(0, colon);
    }
    if (rest.empty()) throw std::invalid_argument(std::string(text) + ": no host");
    address.host = rest;
    return address;
}

std::string to_string(const RemoteAddress& address) {
    if (!address.socket_path.empty())
        return "unix://" + address.socket_path + (address.database ? "?db=" + std::to_string(address.database) : "");
    return "redis://" + address.host + ":" + std::to_string(address.port) + "/" + std::to_string(address.database);
}

}  // namespace fajit::cache
