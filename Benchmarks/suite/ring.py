#!/usr/bin/env python3
"""Counts in a record ring nobody consumed (scripts/bench-overload):

  ring.py FILE…   →   capacity=N written=N dropped=N   (summed over the files)

written: records the producer put in the ring (its write position; nobody read any); dropped:
records it dropped because the ring was full. Reads the layout of CShims/CNetMonitor: the header
("ELFHOOK\\x01", version 3), the queue at offset 4096 (mask, slot size, …; the write position at
+64, the read position at +128, the drop counter at +192). Exits 1 on a file of another layout."""
import struct
import sys

capacity = written = dropped = 0
for path in sys.argv[1:]:
    with open(path, "rb") as file:
        data = file.read(8192)
    magic, version = data[:8], struct.unpack_from("<I", data, 8)[0]
    if magic != b"ELFHOOK\x01" or version != 3 or len(data) < 8192:
        sys.exit(f"ring.py: {path}: not a version 3 record ring")
    mask = struct.unpack_from("<Q", data, 4096)[0]
    write, read, drops = (struct.unpack_from("<Q", data, 4096 + offset)[0] for offset in (64, 128, 192))
    if mask + 1 & mask or read > write:
        sys.exit(f"ring.py: {path}: unexpected queue layout")
    capacity += mask + 1
    written += write
    dropped += drops
print(f"capacity={capacity} written={written} dropped={dropped}")
