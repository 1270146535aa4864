"""det_pshared() (preload/runtime.h) reads glibc's private fields to tell
process-shared objects apart: check it against objects this glibc made, so
a glibc with another layout fails here rather than replaying wrongly."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import ROOT

SRC = r"""
#define _GNU_SOURCE
#include "runtime.h"
uint32_t det_proc;
int det_addr_shared(const void *addr) { (void)addr; return 0; } /* (maps.c: atomics only, not checked here) */

int main(void)
{
	int bad = 0;
	for (int ps = 0; ps < 2; ps++) {
		pthread_mutexattr_t ma; pthread_mutexattr_init(&ma); pthread_mutexattr_setpshared(&ma, ps);
		pthread_mutex_t m; pthread_mutex_init(&m, &ma);
		pthread_condattr_t ca; pthread_condattr_init(&ca); pthread_condattr_setpshared(&ca, ps);
		pthread_cond_t c; pthread_cond_init(&c, &ca);
		pthread_rwlockattr_t ra; pthread_rwlockattr_init(&ra); pthread_rwlockattr_setpshared(&ra, ps);
		pthread_rwlock_t r; pthread_rwlock_init(&r, &ra);
		pthread_barrierattr_t ba; pthread_barrierattr_init(&ba); pthread_barrierattr_setpshared(&ba, ps);
		pthread_barrier_t b; pthread_barrier_init(&b, &ba, 2);
		sem_t s; sem_init(&s, ps, 0);
		const void *objs[] = {&m, &c, &r, &b, &s};
		enum det_objkind kinds[] = {DET_OBJ_MUTEX, DET_OBJ_COND, DET_OBJ_RWLOCK, DET_OBJ_BARRIER, DET_OBJ_SEM};
		for (int i = 0; i < 5; i++) {
			int got = det_pshared(objs[i], kinds[i]) != 0;
			printf("%d %d %d\n", ps, kinds[i], got);
			bad |= got != ps;
		}
	}
	pthread_mutex_t st = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t sc = PTHREAD_COND_INITIALIZER;
	bad |= det_pshared(&st, DET_OBJ_MUTEX) || det_pshared(&sc, DET_OBJ_COND);
	return bad;
}
"""


def test_pshared_fields_match_glibc(tmp_path: Path) -> None:
    src = tmp_path / "pshared.c"
    src.write_text(SRC)
    exe = tmp_path / "pshared"
    subprocess.run(["gcc", "-std=c11", "-I", ROOT / "include", "-I", ROOT / "preload", "-pthread", "-o", exe, src],
                   check=True)
    r = subprocess.run([exe], capture_output=True, text=True)
    assert r.returncode == 0, "det_pshared disagrees with glibc:\n" + r.stdout
