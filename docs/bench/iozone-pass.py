#!/usr/bin/env python3
"""The iozone -e -i 0 pass in plain system calls, as a sanity check of small-files timing:
new file, 4 KiB pwrites, fsync (timed; open and close outside), then the same over it.
Usage: iozone-pass.py SIZE_BYTES PASSES [BYTE] (in the directory under test)."""
import os, statistics, sys, time
size=int(sys.argv[1]); n=int(sys.argv[2]); buf=(sys.argv[3] if len(sys.argv)>3 else 'z').encode()*4096
w=[];r=[]
for i in range(n):
    try: os.unlink('f')
    except FileNotFoundError: pass
    fd=os.open('f',os.O_WRONLY|os.O_CREAT|os.O_TRUNC,0o644)
    t=time.perf_counter()
    for off in range(0,size,4096): os.pwrite(fd,buf,off)
    os.fsync(fd); w.append(size/1024/(time.perf_counter()-t)); os.close(fd)
    fd=os.open('f',os.O_WRONLY)
    t=time.perf_counter()
    for off in range(0,size,4096): os.pwrite(fd,buf,off)
    os.fsync(fd); r.append(size/1024/(time.perf_counter()-t)); os.close(fd)
print('python', size, 'write median', round(statistics.median(w)), 'rewrite median', round(statistics.median(r)))
