#!/bin/sh
# The bindings as a Lua C module: a stock lua5.4 loads ./tt.so with require.
if ! command -v lua5.4 >/dev/null 2>&1; then
    echo "FAIL lua5.4 (the stock interpreter) is not installed: apt-get install lua5.4"
    echo "0 passed, 1 failed"
    exit 1
fi
exec lua5.4 tests/lua/module_check.lua
