//go:build amd64 && !purego

#include "textflag.h"

// func sumLanesAVX2(a, b *float64, n int, tol *Tolerance, out *laneSums)
//
// The AVX2 form of sumLanesGo, which it must match bit for bit: n is a
// multiple of 4 and ymm lane j accumulates the elements i ≡ j (mod 4), with
// separate multiplies and adds (no FMA), in element order.
TEXT ·sumLanesAVX2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ tol+24(FP), DX
	MOVQ out+32(FP), R8
	VBROADCASTSD 0(DX), Y10 // atol
	VBROADCASTSD 8(DX), Y11 // rtol
	MOVQ $0x7fffffffffffffff, AX
	MOVQ AX, X12
	VPBROADCASTQ X12, Y12 // clears the sign: |v|
	VMOVUPD 0(R8), Y0     // abs
	VMOVUPD 32(R8), Y1    // sq
	VMOVUPD 64(R8), Y2    // sqA
	VMOVUPD 96(R8), Y3    // max
	VMOVDQU 128(R8), Y4   // changed
	XORQ BX, BX

sumloop:
	CMPQ BX, CX
	JGE  sumdone
	VMOVUPD (SI)(BX*8), Y5       // x
	VMOVUPD (DI)(BX*8), Y6       // y
	VSUBPD  Y5, Y6, Y6           // diff = y - x
	VANDPD  Y12, Y6, Y7          // d = |diff|
	VADDPD  Y7, Y0, Y0           // abs += d
	VMULPD  Y6, Y6, Y6
	VADDPD  Y6, Y1, Y1           // sq += diff*diff
	VMULPD  Y5, Y5, Y8
	VADDPD  Y8, Y2, Y2           // sqA += x*x
	VMAXPD  Y7, Y3, Y3           // max = max > d ? max : d
	VANDPD  Y12, Y5, Y5
	VMULPD  Y11, Y5, Y5
	VADDPD  Y10, Y5, Y5          // atol + rtol*|x|
	VCMPPD  $0x1e, Y5, Y7, Y9    // d > that (GT_OQ): all ones
	VPSUBQ  Y9, Y4, Y4           // changed -= -1
	ADDQ    $4, BX
	JMP     sumloop

sumdone:
	VMOVUPD Y0, 0(R8)
	VMOVUPD Y1, 32(R8)
	VMOVUPD Y2, 64(R8)
	VMOVUPD Y3, 96(R8)
	VMOVDQU Y4, 128(R8)
	VZEROUPPER
	RET

// func decodeBF16AVX2(dst *float64, src *byte, n int)
//
// n is a multiple of 8. A bf16 is the top half of a float32, which widens
// to float64 exactly.
TEXT ·decodeBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ BX, BX

bf16loop:
	CMPQ BX, CX
	JGE  bf16done
	VPMOVZXWD    (SI)(BX*2), Y0
	VPSLLD       $16, Y0, Y0
	VCVTPS2PD    X0, Y1
	VEXTRACTF128 $1, Y0, X2
	VCVTPS2PD    X2, Y3
	VMOVUPD      Y1, (DI)(BX*8)
	VMOVUPD      Y3, 32(DI)(BX*8)
	ADDQ         $8, BX
	JMP          bf16loop

bf16done:
	VZEROUPPER
	RET

// func decodeF16AVX2(dst *float64, src *byte, n int)
//
// n is a multiple of 8. F16C converts halves, subnormals, infinities and
// NaNs included, to float32 exactly; float32 widens to float64 exactly.
TEXT ·decodeF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ BX, BX

f16loop:
	CMPQ BX, CX
	JGE  f16done
	VCVTPH2PS    (SI)(BX*2), Y0
	VCVTPS2PD    X0, Y1
	VEXTRACTF128 $1, Y0, X2
	VCVTPS2PD    X2, Y3
	VMOVUPD      Y1, (DI)(BX*8)
	VMOVUPD      Y3, 32(DI)(BX*8)
	ADDQ         $8, BX
	JMP          f16loop

f16done:
	VZEROUPPER
	RET
