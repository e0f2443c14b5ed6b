#!/usr/bin/env python3
#
# tests/lib/silent_server.py - a TCP server on 127.0.0.1 that accepts
# connections and never reads or answers them
#
#   silent_server.py
#
# Prints the port it listens on (any free one), then sleeps 10 minutes:
# a connect to it succeeds, and every request on it waits for ever, so a
# client's request timeout is what ends it.  Killed by the test that
# started it (tests/lib/cmdline.bash's start_silent_server).
#
# What it cannot do: refuse, reset or answer anything.

import socket
import time

s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
time.sleep(600)
