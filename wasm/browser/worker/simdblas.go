//go:build js && wasm

package worker

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// simdBlas is gonum's float32 BLAS with Sgemm's C = α·A·Bᵀ + β·C (A and
// B with contiguous rows, k a multiple of 4) done by the dots kernel: the
// demo model's layers (package model), run in the engine worker for the
// in-browser decisions. Other shapes go to gonum.
type simdBlas struct {
	gonum.Implementation
	dots func(x []float32, rows, k int, w []float32, n int, dst []float32)
}

// maxDots bounds the scratch of one Sgemm by the kernel.
const maxDots = 1 << 22

func (b simdBlas) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, bb []float32, ldb int, beta float32, c []float32, ldc int) {
	if b.dots == nil || tA != blas.NoTrans || tB != blas.Trans || k <= 0 || k%4 != 0 || m <= 0 || n <= 0 || lda != k || ldb != k || ldc < n ||
		m*n > maxDots || len(a) < m*k || len(bb) < n*k || len(c) < (m-1)*ldc+n {
		b.Implementation.Sgemm(tA, tB, m, n, k, alpha, a, lda, bb, ldb, beta, c, ldc)
		return
	}
	d := make([]float32, m*n)
	b.dots(a, m, k, bb, n, d)
	for i := 0; i < m; i++ {
		row, di := c[i*ldc:i*ldc+n], d[i*n:(i+1)*n]
		if beta == 0 { // C is not read (BLAS)
			for j := range row {
				row[j] = alpha * di[j]
			}
			continue
		}
		for j := range row {
			row[j] = alpha*di[j] + beta*row[j]
		}
	}
}
