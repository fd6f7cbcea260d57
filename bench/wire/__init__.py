"""The wire: what crosses between guest and host, read from the C headers.

  cdefs    reads the shared C headers (constants, X-macro tables, structs)
  frames   the serial framing: Deframer, encode, HELLO/REPLY/EXIT/RESULT
  records  trace records: EVENTS/STATS/EXPECT frames into a Capture
"""
