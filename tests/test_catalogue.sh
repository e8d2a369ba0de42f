#!/bin/sh
# The error catalogue (tests/errors/run.sh): the exact message of each mistake.
exec sh tests/errors/run.sh
