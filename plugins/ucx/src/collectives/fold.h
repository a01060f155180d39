// MPICH's fold of a world that is no power of two onto its largest power of two, shared by the
// algorithms that pair ranks by rank ^ 2^k (recursive doubling, Rabenseifner, recursive halving):
// with rem = n - pof2, among ranks 0..2rem-1 each odd rank hands its data to its even neighbour
// first and sits out until it gets the result back; the pof2 ranks left are numbered 0..pof2-1.
// Internal to the collectives.
#pragma once

namespace commbench::ucx_backend::detail {

struct Fold {
  int pof2 = 1;
  int rem = 0;

  explicit Fold(int n) {
    while (pof2 * 2 <= n) pof2 *= 2;
    rem = n - pof2;
  }
  bool sits_out(int rank) const { return rank < 2 * rem && rank % 2 == 1; }
  bool takes_partner(int rank) const { return rank < 2 * rem && rank % 2 == 0; }  // from rank + 1
  // The virtual rank of a rank that does not sit out.
  int vrank(int rank) const { return rank < 2 * rem ? rank / 2 : rank - rem; }
  // The rank behind virtual rank v, and how many ranks it speaks for (2: itself and rank + 1).
  int real(int v) const { return v < rem ? 2 * v : v + rem; }
  int members(int v) const { return v < rem ? 2 : 1; }
};

}  // namespace commbench::ucx_backend::detail
