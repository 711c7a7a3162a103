# Captures real MQTT frames from mosquitto 2.0.11 for the fuzz seed corpus:
# a raw-socket client (both versions) connects, subscribes, publishes at
# QoS 0/1/2 with MQTT 5 properties; everything the broker sends back and
# everything the client sent is written, one stream and one frame a file.
import socket, subprocess, time, os, struct, sys
out = sys.argv[1]
port = 18830 + os.getpid() % 1000
open('m.conf','w').write(f'listener {port} 127.0.0.1\nallow_anonymous true\n')
b = subprocess.Popen(['mosquitto','-c','m.conf'], stderr=subprocess.DEVNULL)
time.sleep(0.5)
def vbi(n):
    o=b''
    while True:
        d=n%128; n//=128
        o+=bytes([d|(0x80 if n else 0)])
        if not n: return o
def s(x): x=x.encode() if isinstance(x,str) else x; return struct.pack('>H',len(x))+x
def pkt(t,body): return bytes([t])+vbi(len(body))+body
def props(*ps): body=b''.join(ps); return vbi(len(body))+body
def up(k,v): return b'\x26'+s(k)+s(v)
def ct(v): return b'\x03'+s(v)
def recvall(c, wait=0.4):
    c.settimeout(wait); data=b''
    try:
        while True:
            d=c.recv(65536)
            if not d: break
            data+=d
    except socket.timeout: pass
    return data
def split(data):
    fr=[]; i=0
    while i+2<=len(data):
        n=0; m=1; j=i+1
        while True:
            n+=(data[j]&127)*m; m*=128
            if not data[j]&128: break
            j+=1
        end=j+1+n; fr.append(data[i:end]); i=end
    return fr
seq=0
def save(name, data):
    global seq
    open(os.path.join(out, name), 'wb').write(data)
for v5 in (True, False):
    ver = 'v5' if v5 else 'v311'
    sent=[]
    c=socket.create_connection(('127.0.0.1',port))
    cp = props(b'\x11'+struct.pack('>I',3600), b'\x21'+struct.pack('>H',20)) if v5 else b''
    conn = pkt(0x10, s('MQTT')+bytes([5 if v5 else 4, 0x02])+struct.pack('>H',30)+cp+s('cap-'+ver))
    sent.append(conn)
    sub = pkt(0x82, struct.pack('>H',1)+(props() if v5 else b'')+s('cap/#')+bytes([2])+s('cap2/+')+bytes([1]))
    sent.append(sub)
    pubs=[]
    pp = props(ct('application/json'), up('ce_specversion','1.0'), up('ce_id','e-1'), up('ce_source','/cap'), up('ce_type','cap.t')) if v5 else b''
    pubs.append(pkt(0x30, s('cap/q0')+pp+b'{"a":0}'))
    pubs.append(pkt(0x32, s('cap/q1')+struct.pack('>H',10)+pp+b'{"a":1}'))
    pubs.append(pkt(0x34, s('cap/q2')+struct.pack('>H',11)+pp+b'{"a":2}'))
    pubs.append(pkt(0x32, s('cap2/x')+struct.pack('>H',12)+(props() if v5 else b'')+b'{"specversion":"1.0","id":"1","source":"/s","type":"t"}'))
    for x in [conn, sub]: c.sendall(x); time.sleep(0.1)
    for x in pubs: c.sendall(x); sent.append(x); time.sleep(0.05)
    got = recvall(c)
    # answer the broker: PUBACK/PUBREC for what it sent, PUBREL for our QoS 2
    ans=b''
    for f in split(got):
        t=f[0]>>4
        if t==3 and (f[0]>>1)&3:
            n=0;m=1;j=1
            while True:
                n+=(f[j]&127)*m;m*=128
                if not f[j]&128: break
                j+=1
            body=f[j+1:]; tl=struct.unpack('>H',body[:2])[0]; pid=body[2+tl:4+tl]
            ans+=pkt(0x40 if (f[0]>>1)&3==1 else 0x50, pid)
        if t==5: ans+=pkt(0x62, f[-2:] if len(f)==4 else f[2:4])
    ans+=pkt(0x62, struct.pack('>H',11))+pkt(0xc0,b'')
    c.sendall(ans); sent.append(ans)
    got += recvall(c)
    c.sendall(pkt(0xe0, b'\x00\x00' if v5 else b'')); c.close()
    save(f'{ver}-broker-stream.bin', got)
    save(f'{ver}-client-stream.bin', b''.join(sent))
    for k,f in enumerate(split(got)):
        save(f'{ver}-broker-{k:02d}-type{f[0]>>4}.bin', f)
    for k,f in enumerate(split(b''.join(sent))):
        save(f'{ver}-client-{k:02d}-type{f[0]>>4}.bin', f)
b.terminate(); b.wait()
