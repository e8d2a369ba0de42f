#!/bin/sh
# The --compare verdicts on the catalogues of wrong solutions
# (tests/compare/*__*.lua and tests/exercises/*__*.lua, each with its
# .expected.json), the exercises' references and starters: see
# tests/compare/catalogue.lua. Prints "N passed, N failed".
cd "$(dirname "$0")/.." || exit 2
exec ./tensortrace -q tests/compare/catalogue.lua
