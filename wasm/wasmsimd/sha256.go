package wasmsimd

// sha256Body is sha256(state, data, nblocks): the SHA-256 compression
// function (FIPS 180-4, 6.2.2) over nblocks ≥ 1 blocks of 64 bytes at
// data, updating the eight words of state (native-endian u32 at state).
// It is scalar WebAssembly: the engine worker hashes every file of an
// audit as its bytes pass, and Go's wasm backend compiles its own
// SHA-256 to code some three times slower than V8 makes of this. All 64
// rounds are unrolled with the working variables renamed, so that no
// round moves a value between locals; the message schedule is a rolling
// window of 16 locals.
func sha256Body() []byte {
	const (
		pState, pData, pN = 0, 1, 2
		lEnd              = 3
		lH                = 4  // 4–11: the state
		lV                = 12 // 12–19: a … h
		lW                = 20 // 20–35: the schedule's window
		lT1, lT2          = 36, 37
		lAB               = 38 // 38–39: a ^ b of this round and the last
		nI32              = 37
	)
	var a asm
	// end = data + 64·n
	a.get(pData)
	a.get(pN)
	a.i32(6)
	a.op(0x74) // i32.shl
	a.op(0x6a)
	a.set(lEnd)
	for i := byte(0); i < 8; i++ {
		a.get(pState)
		a.op(0x28, 2, 4*i) // i32.load offset 4i
		a.set(lH + i)
	}
	a.op(0x03, 0x40) // each block
	for i := byte(0); i < 8; i++ {
		a.get(lH + i)
		a.set(lV + i)
	}
	for i := byte(0); i < 16; i++ { // W[i] = the big-endian word i
		a.get(pData)
		a.op(0x28, 0, 4*i) // i32.load (align 1) offset 4i
		a.set(lW + i)
		a.bswap(lW + i)
	}
	for r := 0; r < 64; r++ {
		// The variables of round r: a is V[(8 − r) mod 8], b the next, …
		v := func(k int) byte { return lV + byte((k-r%8+8)%8) }
		w := func(k int) byte { return lW + byte(k%16) }
		if r >= 16 { // W[r] = σ1(W[r−2]) + W[r−7] + σ0(W[r−15]) + W[r−16]
			a.sigma(w(r-2), 17, 19, 10)
			a.get(w(r - 7))
			a.op(0x6a)
			a.sigma(w(r-15), 7, 18, 3)
			a.op(0x6a)
			a.get(w(r - 16))
			a.op(0x6a)
			a.set(w(r))
		}
		e, f, g, h := v(4), v(5), v(6), v(7)
		// T1 = h + Σ1(e) + Ch(e, f, g) + K[r] + W[r]
		a.get(h)
		a.bigSigma(e, 6, 11, 25)
		a.op(0x6a)
		a.get(g) // Ch = g ^ (e & (f ^ g))
		a.get(e)
		a.get(f)
		a.get(g)
		a.op(0x73, 0x71, 0x73) // xor, and, xor
		a.op(0x6a)
		a.i32c(int32(sha256K[r]))
		a.op(0x6a)
		a.get(w(r))
		a.op(0x6a)
		a.set(lT1)
		// T2 = Σ0(a) + Maj(a, b, c); Maj = b ^ ((a ^ b) & (b ^ c)), and
		// this round's a ^ b is the next round's b ^ c.
		x, y, z := v(0), v(1), v(2)
		ab, bc := lAB+byte(r%2), lAB+byte((r+1)%2)
		a.bigSigma(x, 2, 13, 22)
		if r == 0 {
			a.get(y)
			a.get(z)
			a.op(0x73)
			a.set(bc)
		}
		a.get(y)
		a.get(x)
		a.get(y)
		a.op(0x73)
		a.tee(ab)
		a.get(bc)
		a.op(0x71, 0x73) // and, xor
		a.op(0x6a)
		a.set(lT2)
		// d += T1 (it becomes e); h = T1 + T2 (it becomes a)
		d := v(3)
		a.get(d)
		a.get(lT1)
		a.op(0x6a)
		a.set(d)
		a.get(lT1)
		a.get(lT2)
		a.op(0x6a)
		a.set(h)
	}
	// After 64 rounds (a multiple of 8) the names are back where they began.
	for i := byte(0); i < 8; i++ {
		a.get(lH + i)
		a.get(lV + i)
		a.op(0x6a)
		a.set(lH + i)
	}
	a.get(pData)
	a.i32c(64)
	a.op(0x6a)
	a.set(pData)
	a.whileLt(pData, lEnd)
	for i := byte(0); i < 8; i++ {
		a.get(pState)
		a.get(lH + i)
		a.op(0x36, 2, 4*i) // i32.store offset 4i
	}
	return a.body(nI32, tI32)
}

// bswap reverses the bytes of i32 local l: (rotl(x, 8) & 0x00ff00ff) |
// (rotr(x, 8) & 0xff00ff00).
func (a *asm) bswap(l byte) {
	a.get(l)
	a.i32(8)
	a.op(0x77) // i32.rotl
	a.i32c(0x00ff00ff)
	a.op(0x71)
	a.get(l)
	a.i32(8)
	a.op(0x78)          // i32.rotr
	a.i32c(-0x00ff0100) // 0xff00ff00
	a.op(0x71, 0x72)
	a.set(l)
}

// bigSigma pushes rotr(x, p) ^ rotr(x, q) ^ rotr(x, s) of local x.
func (a *asm) bigSigma(x, p, q, s byte) {
	for i, n := range []byte{p, q, s} {
		a.get(x)
		a.i32(n)
		a.op(0x78)
		if i > 0 {
			a.op(0x73)
		}
	}
}

// sigma pushes rotr(x, p) ^ rotr(x, q) ^ (x >> s) of local x.
func (a *asm) sigma(x, p, q, s byte) {
	a.get(x)
	a.i32(p)
	a.op(0x78)
	a.get(x)
	a.i32(q)
	a.op(0x78, 0x73)
	a.get(x)
	a.i32(s)
	a.op(0x76, 0x73) // i32.shr_u, xor
}

// i32c is i32.const v for any int32 (signed LEB128).
func (a *asm) i32c(v int32) {
	a.op(0x41)
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			a.op(b)
			return
		}
		a.op(b | 0x80)
	}
}

// sha256K are the round constants (FIPS 180-4, 4.2.2).
var sha256K = [64]uint32{
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

// tee is local.tee l.
func (a *asm) tee(l byte) { a.c = append(a.c, 0x22, l) }
