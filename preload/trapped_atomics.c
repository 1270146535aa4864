/*
 * preload/trapped_atomics.c - atomics in a program det-cc did not build
 * (detrec --patch-atomics): the executable's lock-prefixed instructions and
 * xchg with memory, made events at load time by patching them (a jump to
 * det, or a trap where a jump does not fit), so that
 * recording, strict mode and PCT see them and replay orders them, as
 * det-cc's instrumentation does at build time.
 *
 * Rules of this file:
 *  - The sites come from detrec (det.check.patch: capstone's decoding of the
 *    executable's code) in _DET_ATOMIC_SITES, "VADDR:BYTES,..." in hex, the
 *    executable's link-time addresses and the instruction's bytes. The
 *    variable is in the recorded environment, so every replay patches the
 *    same instructions. Nothing is patched unless every site's bytes are the
 *    executable's (another image, exec'd, inherits the variable) and each
 *    decodes as a form below; a site with a segment prefix (TLS) is left.
 *  - A site of 5 bytes or more becomes a jmp to its slot before the program
 *    runs (its other threads do not exist yet), in pages mapped within 2 GiB
 *    of the executable: a stub there enters det_atomic_jumped_enter, which
 *    saves every register (xsave for the vector ones, this CPU's layout),
 *    moves to the det stack and begins the event (det_atomic_begin: its
 *    place and the ordering lock, or the turn; in replay the wait for it);
 *    a copy of the instruction (a RIP-relative displacement moved for the
 *    copy's place) runs; a second stub ends the event the same way
 *    (result = the value the location held before, as det-cc's) and jumps
 *    back after the site. ~0.5 us a site, a trap's ~6.5 us here.
 *  - A shorter site (xchg, xadd without a displacement) is trapped: its
 *    first byte becomes int3, and the copy is followed by int3; the first
 *    trap begins the event, the second ends it. Under gdb, and where the
 *    jumps cannot be used (no OSXSAVE, a shadow stack: the stubs return
 *    where no call was made), every site is trapped.
 *  - The thread is inside det between begin and end: a signal meanwhile is
 *    held. A handler det runs at an atomic's begin may have atomics of its
 *    own: they nest (atomics.c keeps one operation per level).
 *  - Replay: a compare-exchange that failed in the recording is not run: the
 *    value it read and the flags of its comparison come from the trace. Any
 *    other one first waits (bounded) until its location holds the value it
 *    read in the recording: the store that put it there may be a plain one
 *    (a spinlock's release is a mov), which is no event.
 *  - Strict mode switches threads before a trapped atomic, not after it
 *    (end_event says why).
 *  - A site whose operand is on the stack (base %rsp: `lock or $0,(%rsp)`,
 *    a full fence) is an ATOMIC_FENCE, no object.
 *  - SIGTRAP stays deliverable: a trap while it is blocked kills the
 *    program, so sigprocmask, pthread_sigmask and handlers' masks
 *    (signals.c) never block it once sites are patched.
 *  - Under gdb (replay with DET_F_ALL_ORDERED) the trap is ud2, a SIGILL,
 *    not int3: gdb takes every SIGTRAP for its own (a breakpoint, a step)
 *    and stops, while det's gdb extension tells it to pass SIGILL on
 *    without stopping. det_trap_sig is the one in use; everything
 *    said of SIGTRAP here and in signals.c is said of it.
 */
#include "runtime.h"

#include <cpuid.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>

#define SITES_ENV "_DET_ATOMIC_SITES"
#define SLOT 64 /* bytes of out-of-line code per site: see copy_of */
#define STUB 16 /* a jumped site's entry into det: lea, push, jmp (see stub_at) */
#define MAX_LEN 15
#define WAIT_NS 2000000000ll /* replay: the longest a site waits for its location's recorded value */

enum form { F_OTHER, F_CMPXCHG, F_CMPXCHG8B, F_XADD, F_XCHG };

struct site {
	uintptr_t at;
	uint8_t len;
	uint8_t size; /* operand bytes: 1, 2, 4, 8, 16 */
	uint8_t form;
	uint8_t rmw_op; /* aux's operation (LLVM's AtomicRMWInst numbers; 15: another) */
	int8_t base;    /* register number, -1 none, -2 %rip */
	int8_t index;   /* -1 none */
	uint8_t scale;
	int8_t reg;       /* ModRM.reg: cmpxchg's, xadd's and xchg's register */
	uint8_t reg_hi8;  /* that register is ah, ch, dh or bh */
	uint8_t disp_off; /* where a RIP-relative displacement is in the bytes */
	uint8_t jumped;   /* a jmp to its slot, not a trap (see the rules) */
	int32_t disp;
	uint8_t bytes[MAX_LEN];
};

static struct site *sites;
static size_t nsites;
static uint8_t *tramp; /* nsites slots of SLOT bytes */
int det_traps_patched;
int det_trap_sig = SIGTRAP;

/* The trap instruction: int3, or ud2 under gdb (see the rules). */
static const uint8_t INT3[] = {0xcc}, UD2[] = {0x0f, 0x0b};

const uint8_t *det_trap_bytes(size_t *len)
{
	int under_gdb = det_mode == DET_MODE_REPLAY && (det_hdr->flags & DET_F_ALL_ORDERED);
	det_trap_sig = under_gdb ? SIGILL : SIGTRAP;
	*len = under_gdb ? sizeof(UD2) : sizeof(INT3);
	return under_gdb ? UD2 : INT3;
}

static const int greg_of[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
				REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};

/* ------------------------------------------------------------------ */
/* decoding the forms that take a lock prefix, and xchg */

static int decode(struct site *s)
{
	const uint8_t *b = s->bytes;
	int i = 0, rex = 0, opsz16 = 0, lock = 0;
	for (;; i++) {
		if (i >= s->len)
			return 0;
		if (b[i] == 0xf0)
			lock = 1;
		else if (b[i] == 0x66)
			opsz16 = 1;
		else if (b[i] == 0xf2 || b[i] == 0xf3 || b[i] == 0x2e || b[i] == 0x3e || b[i] == 0x26 || b[i] == 0x36)
			continue; /* (xacquire/xrelease hints, null segments) */
		else if (b[i] == 0x64 || b[i] == 0x65)
			return 0; /* %fs/%gs: thread-local, not shared */
		else
			break;
	}
	if (b[i] >= 0x40 && b[i] <= 0x4f)
		rex = b[i++];
	if (i + 2 > s->len)
		return 0;
	int two = b[i] == 0x0f;
	uint8_t op = two ? b[i + 1] : b[i];
	i += two ? 2 : 1;
	if (i >= s->len)
		return 0;
	uint8_t modrm = b[i++];
	int mod = modrm >> 6, reg = ((modrm >> 3) & 7) | (rex & 4 ? 8 : 0), rm = modrm & 7;
	if (mod == 3)
		return 0; /* a register operand */
	s->base = -1;
	s->index = -1;
	s->scale = 1;
	if (rm == 4) {
		if (i >= s->len)
			return 0;
		uint8_t sib = b[i++];
		s->scale = (uint8_t)(1 << (sib >> 6));
		int idx = ((sib >> 3) & 7) | (rex & 2 ? 8 : 0);
		s->index = idx == 4 ? -1 : (int8_t)idx;
		if ((sib & 7) == 5 && mod == 0)
			mod = 2, s->base = -1; /* disp32, no base */
		else
			s->base = (int8_t)((sib & 7) | (rex & 1 ? 8 : 0));
	} else if (rm == 5 && mod == 0) {
		s->base = -2;
		mod = 2;
	} else {
		s->base = (int8_t)(rm | (rex & 1 ? 8 : 0));
	}
	s->disp = 0;
	s->disp_off = (uint8_t)i;
	if (mod == 1) {
		if (i + 1 > s->len)
			return 0;
		s->disp = (int8_t)b[i];
		i += 1;
	} else if (mod == 2) {
		if (i + 4 > s->len)
			return 0;
		memcpy(&s->disp, b + i, 4);
		i += 4;
	}
	int wide = rex & 8 ? 8 : opsz16 ? 2 : 4;
	int ext = (modrm >> 3) & 7, imm = 0;
	s->reg = (int8_t)reg;
	s->form = F_OTHER;
	s->rmw_op = 15;
	if (two) {
		switch (op) {
		case 0xb0: case 0xb1:
			s->form = F_CMPXCHG;
			s->size = op == 0xb0 ? 1 : (uint8_t)wide;
			break;
		case 0xc0: case 0xc1:
			s->form = F_XADD;
			s->rmw_op = 1;
			s->size = op == 0xc0 ? 1 : (uint8_t)wide;
			break;
		case 0xc7:
			if (ext != 1)
				return 0;
			s->form = F_CMPXCHG8B;
			s->size = rex & 8 ? 16 : 8;
			break;
		case 0xab: case 0xb3: case 0xbb:
			s->size = (uint8_t)wide;
			break;
		case 0xba:
			if (ext < 4)
				return 0;
			s->size = (uint8_t)wide;
			imm = 1;
			break;
		default:
			return 0;
		}
		if (!lock)
			return 0;
	} else {
		static const uint8_t alu_op[8] = {1, 5, 15, 15, 3, 2, 6, 15}; /* add or adc sbb and sub xor (cmp) */
		if (op <= 0x31 && (op & 7) <= 1) {
			s->rmw_op = alu_op[op >> 3];
			s->size = op & 1 ? (uint8_t)wide : 1;
		} else if (op == 0x80 || op == 0x81 || op == 0x83) {
			if (ext == 7)
				return 0; /* cmp: no lock */
			s->rmw_op = alu_op[ext];
			s->size = op == 0x80 ? 1 : (uint8_t)wide;
			imm = op == 0x81 ? (wide == 2 ? 2 : 4) : 1;
		} else if (op == 0x86 || op == 0x87) {
			s->form = F_XCHG;
			s->rmw_op = 0;
			s->size = op == 0x86 ? 1 : (uint8_t)wide;
		} else if (op == 0xf6 || op == 0xf7) {
			if (ext != 2 && ext != 3)
				return 0; /* not, neg */
			s->size = op == 0xf6 ? 1 : (uint8_t)wide;
		} else if (op == 0xfe || op == 0xff) {
			if (ext > 1)
				return 0; /* inc, dec */
			s->rmw_op = ext == 0 ? 1 : 2;
			s->size = op == 0xfe ? 1 : (uint8_t)wide;
		} else {
			return 0;
		}
		if (!lock && s->form != F_XCHG)
			return 0;
	}
	s->reg_hi8 = s->size == 1 && !rex && reg >= 4 && reg < 8; /* %ah, %ch, %dh, %bh */
	return i + imm == s->len;
}

static uint64_t reg_value(const greg_t *g, int reg, int hi8, int size)
{
	uint64_t v = (uint64_t)g[greg_of[reg & 15]];
	if (hi8)
		v = (uint64_t)g[greg_of[reg - 4]] >> 8;
	return size >= 8 ? v : v & ((1ull << (size * 8)) - 1);
}

static uintptr_t address_of(const struct site *s, const greg_t *g)
{
	uintptr_t a = (uintptr_t)(intptr_t)s->disp;
	if (s->base == -2)
		a += s->at + s->len;
	else if (s->base >= 0)
		a += (uintptr_t)g[greg_of[(int)s->base]];
	if (s->index >= 0)
		a += (uintptr_t)g[greg_of[(int)s->index]] * s->scale;
	return a;
}

static uint64_t load(uintptr_t a, int size)
{
	switch (size) {
	case 1:
		return __atomic_load_n((const uint8_t *)a, __ATOMIC_SEQ_CST);
	case 2:
		return __atomic_load_n((const uint16_t *)a, __ATOMIC_SEQ_CST);
	case 4:
		return __atomic_load_n((const uint32_t *)a, __ATOMIC_SEQ_CST);
	default: /* (16: its low half) */
		return __atomic_load_n((const uint64_t *)a, __ATOMIC_SEQ_CST);
	}
}

/* The flags `cmp mem, acc` leaves (a failed cmpxchg's), size bytes wide. */
static uint64_t cmp_flags(uint64_t acc, uint64_t mem, int size)
{
	int bits = size * 8;
	uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
	uint64_t r = (acc - mem) & mask, sign = 1ull << (bits - 1);
	uint64_t f = 0;
	if ((acc & mask) < (mem & mask))
		f |= 1u << 0; /* CF */
	if (!(__builtin_popcount((unsigned)(r & 0xff)) & 1))
		f |= 1u << 2; /* PF */
	if ((acc ^ mem ^ r) & 0x10)
		f |= 1u << 4; /* AF */
	if (!r)
		f |= 1u << 6; /* ZF */
	if (r & sign)
		f |= 1u << 7; /* SF */
	if ((acc ^ mem) & (acc ^ r) & sign)
		f |= 1u << 11; /* OF */
	return f;
}

#define ARITH_FLAGS ((1u << 0) | (1u << 2) | (1u << 4) | (1u << 6) | (1u << 7) | (1u << 11))
#define ZF (1u << 6)

/* ------------------------------------------------------------------ */
/* the traps */

/* A thread's atomics between their two traps (nested only when a handler
 * of a thread det does not know runs between them). */
#define NEST 4
static __thread struct {
	const struct site *s;
	uint64_t acc, acc_hi, before;
	uint32_t aux;
} open_sites[NEST] __attribute__((tls_model("initial-exec")));
static __thread int nopen __attribute__((tls_model("initial-exec")));

/* Where a site's copy runs: at the start of its slot after a trap; after
 * the stub a jump enters by. */
static uint8_t *copy_of(const struct site *s)
{
	return tramp + (size_t)(s - sites) * SLOT + (s->jumped ? STUB : 0);
}

static const struct site *site_at(uintptr_t a)
{
	size_t lo = 0, hi = nsites;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (sites[mid].at < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nsites && sites[lo].at == a ? &sites[lo] : NULL;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	det_sys(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0, 0, 0, 0);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Replay: until the location holds what the recording read there. */
static void wait_value(uintptr_t a, int size, uint64_t want)
{
	uint64_t mask = size >= 8 ? ~0ull : (1ull << (size * 8)) - 1;
	int64_t until = 0;
	for (int spins = 0; (load(a, size) & mask) != (want & mask); spins++) {
		if (spins < 1000) {
			__builtin_ia32_pause();
			continue;
		}
		int64_t now = now_ns();
		if (!until)
			until = now + WAIT_NS;
		else if (now > until)
			return; /* the check at the end says it differs */
		det_sys(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	}
}

/* det_atomic_end, where strict mode does not switch threads: the code
 * after a trapped atomic up to the thread's next event runs in the same
 * turn. A switch there would leave a spinlock held by a thread that cannot
 * run while the others spin on it with plain loads, no event, until the
 * watchdog preempts them (which replay cannot repeat); the point before
 * the atomic (after the previous event) is a switch point already. */
static void end_event(uint64_t value, uint32_t aux)
{
	det_tls.keep_turn = 1;
	det_atomic_end(value, aux);
	det_tls.keep_turn = 0;
}

static void first_trap(const struct site *s, greg_t *g)
{
	int stack = s->base == 4; /* (%rsp): a fence */
	uintptr_t a = address_of(s, g);
	uint32_t kind = stack ? DET_EV_ATOMIC_FENCE : s->form == F_CMPXCHG || s->form == F_CMPXCHG8B
						? DET_EV_ATOMIC_CMPXCHG : DET_EV_ATOMIC_RMW;
	uint32_t aux = DET_ATOMIC_AUX(s->size > 8 ? 8 : s->size, 5, s->rmw_op) | DET_ATOMIC_TRAPPED;
	int size = s->size > 8 ? 8 : s->size;
	const struct det_op *op = det_atomic_begin(stack ? NULL : (void *)a, kind, aux, s->at);
	if (op && det_replaying() && op->rec && !stack) {
		const struct det_sched *rec = op->rec;
		if (s->form == F_CMPXCHG && !(rec->aux & DET_ATOMIC_SWAPPED)) {
			/* failed in the recording: its outcome, without running it */
			uint64_t acc = reg_value(g, 0, 0, size), old = (uint64_t)rec->result;
			uint64_t rax = (uint64_t)g[REG_RAX];
			if (size == 8)
				rax = old;
			else if (size == 4)
				rax = old & 0xffffffffu;
			else
				rax = (rax & ~((1ull << (size * 8)) - 1)) | (old & ((1ull << (size * 8)) - 1));
			g[REG_RAX] = (greg_t)rax;
			g[REG_EFL] = (greg_t)(((uint64_t)g[REG_EFL] & ~(uint64_t)ARITH_FLAGS) | cmp_flags(acc, old, size));
			g[REG_RIP] = (greg_t)(s->at + s->len);
			end_event(old, aux);
			return;
		}
		wait_value(a, size, (uint64_t)rec->result);
	}
	if (nopen < NEST) {
		__typeof__(open_sites[0]) *o = &open_sites[nopen];
		o->s = s;
		o->aux = aux;
		o->acc = (uint64_t)g[REG_RAX];
		o->acc_hi = (uint64_t)g[REG_RDX];
		o->before = stack ? 0 : load(a, size);
	}
	nopen++;
	g[REG_RIP] = (greg_t)copy_of(s);
}

static void second_trap(const struct site *s, greg_t *g)
{
	g[REG_RIP] = (greg_t)(s->at + s->len);
	if (nopen <= 0)
		return;
	nopen--;
	if (nopen >= NEST || open_sites[nopen].s != s) {
		end_event(0, 0); /* (lost track: nested too deep) */
		return;
	}
	__typeof__(open_sites[0]) *o = &open_sites[nopen];
	int size = s->size > 8 ? 8 : s->size;
	uint64_t mask = size >= 8 ? ~0ull : (1ull << (size * 8)) - 1;
	uint64_t old = o->before;
	uint32_t aux = o->aux;
	int zf = ((uint64_t)g[REG_EFL] & ZF) != 0;
	switch (s->form) {
	case F_CMPXCHG:
		old = (zf ? o->acc : (uint64_t)g[REG_RAX]) & mask;
		break;
	case F_CMPXCHG8B:
		old = zf ? (s->size == 16 ? o->acc : (o->acc & 0xffffffffu) | o->acc_hi << 32)
			 : (s->size == 16 ? (uint64_t)g[REG_RAX]
					  : ((uint64_t)g[REG_RAX] & 0xffffffffu) | (uint64_t)g[REG_RDX] << 32);
		break;
	case F_XADD:
	case F_XCHG:
		old = reg_value(g, s->reg, s->reg_hi8, size);
		break;
	default:
		break;
	}
	if ((s->form == F_CMPXCHG || s->form == F_CMPXCHG8B) && zf)
		aux |= DET_ATOMIC_SWAPPED;
	end_event(old, aux);
}

int det_atomic_trap(void *ucv)
{
	if (!nsites)
		return 0;
	greg_t *g = ((ucontext_t *)ucv)->uc_mcontext.gregs;
	/* (int3 reports the address after it; ud2 its own) */
	uintptr_t at = (uintptr_t)g[REG_RIP] - (det_trap_sig == SIGTRAP);
	const struct site *s = site_at(at);
	if (s) {
		first_trap(s, g);
		return 1;
	}
	if (tramp && at >= (uintptr_t)tramp && at < (uintptr_t)tramp + nsites * SLOT) {
		s = &sites[(at - (uintptr_t)tramp) / SLOT];
		if (!s->jumped && at == (uintptr_t)copy_of(s) + s->len) {
			second_trap(s, g);
			return 1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* the jumps: det_atomic_jumped, in place of the two traps */

/* The frame det_atomic_jumped builds on the program's stack is laid out as
 * a ucontext's gregs, so that first_trap and second_trap read and write it
 * as they do a trap's; the site's index is the word above. */
#define FRAME_SITE 18
_Static_assert(REG_R8 == 0 && REG_R15 == 7 && REG_RDI == 8 && REG_RSI == 9 && REG_RBP == 10 && REG_RBX == 11 &&
		       REG_RDX == 12 && REG_RAX == 13 && REG_RCX == 14 && REG_RSP == 15 && REG_RIP == 16 &&
		       REG_EFL == 17 && FRAME_SITE == 18,
	       "det_atomic_jumped pushes the registers in the order of a ucontext's gregs");

/* What det_atomic_jumped's xsave keeps (x87, SSE, AVX, AVX-512, as far as
 * XCR0 enables them) and the bytes that takes, this CPU's layout: found
 * at start (jumps_usable), 0 where the jumps are not used. */
DET_HIDDEN uint64_t det_xsave_bytes, det_xsave_mask;

DET_HIDDEN void det_atomic_jumped_enter(greg_t *g);
DET_HIDDEN void det_atomic_jumped_leave(greg_t *g);

void det_atomic_jumped_enter(greg_t *g)
{
	first_trap(&sites[g[FRAME_SITE]], g);
}

void det_atomic_jumped_leave(greg_t *g)
{
	second_trap(&sites[g[FRAME_SITE]], g);
}

/*
 * det_atomic_jumped_{enter,leave}: a site's stub has stepped over the red
 * zone and pushed its index; this pushes the flags, a word for the address
 * to go on at (RIP), the stack pointer and the other registers, which makes
 * the frame; moves to the det stack as an entry stub does (stack.c: det's
 * work leaves nothing on the program's stack but that frame, which holds
 * the program's own registers); keeps the vector registers with xsave
 * there (det's C code may use any); calls the hook with the frame; and
 * returns everything as the hook left it, going on at the frame's RIP with
 * `ret $144` (the RIP word, then the flags, the index and the red zone).
 */
#define JUMPED_STUB(name, hook)                                                                    \
	__asm__(".text\n"                                                                          \
		".globl " name "\n"                                                                \
		".hidden " name "\n"                                                               \
		".type " name ", @function\n"                                                      \
		".p2align 4\n" name ":\n"                                                          \
		"pushfq\n"                                                                         \
		"cld\n"                                                                            \
		"pushq $0\n"                                                                       \
		"pushq %rsp\n"                                                                     \
		"pushq %rcx\npushq %rax\npushq %rdx\npushq %rbx\npushq %rbp\npushq %rsi\npushq %rdi\n" \
		"pushq %r15\npushq %r14\npushq %r13\npushq %r12\npushq %r11\npushq %r10\npushq %r9\n"  \
		"pushq %r8\n"                                                                      \
		"movq %rsp, %rbx\n"                                                                \
		"movq det_stk@gottpoff(%rip), %r11\n"                                              \
		"movq %fs:24(%r11), %r12\n" /* the last entry's program rsp, put back after */     \
		"movq %rsp, %r10\n" /* (where it stays) */                                         \
		DET_STACK_PICK("3f")                                                               \
		"movq %rbx, %fs:24(%r11)\n"                                                        \
		"3:\n"                                                                             \
		"movq %r10, %rsp\n"                                                                \
		"subq det_xsave_bytes(%rip), %rsp\n"                                               \
		"andq $-64, %rsp\n"                                                                \
		"xorl %eax, %eax\n" /* xsave's header: xrstor wants its reserved bytes 0 */        \
		"movq %rax, 512(%rsp)\nmovq %rax, 520(%rsp)\nmovq %rax, 528(%rsp)\nmovq %rax, 536(%rsp)\n" \
		"movq %rax, 544(%rsp)\nmovq %rax, 552(%rsp)\nmovq %rax, 560(%rsp)\nmovq %rax, 568(%rsp)\n" \
		"movl det_xsave_mask(%rip), %eax\n"                                                \
		"xorl %edx, %edx\n"                                                                \
		"xsave64 (%rsp)\n"                                                                 \
		"movq %rbx, %rdi\n"                                                                \
		"call " hook "\n"                                                                  \
		"movl det_xsave_mask(%rip), %eax\n"                                                \
		"xorl %edx, %edx\n"                                                                \
		"xrstor64 (%rsp)\n"                                                                \
		"movq det_stk@gottpoff(%rip), %r11\n"                                              \
		"movq %r12, %fs:24(%r11)\n"                                                        \
		"movq %rbx, %rsp\n"                                                                \
		"popq %r8\npopq %r9\npopq %r10\npopq %r11\npopq %r12\npopq %r13\npopq %r14\n"       \
		"popq %r15\npopq %rdi\npopq %rsi\npopq %rbp\npopq %rbx\npopq %rdx\npopq %rax\n"      \
		"popq %rcx\n"                                                                      \
		"leaq 8(%rsp), %rsp\n" /* (the stack pointer's word) */                            \
		"pushq 8(%rsp)\n"      /* the flags, from above the RIP word */                    \
		"popfq\n"                                                                          \
		"ret $144\n"                                                                       \
		".size " name ", .-" name "\n");

JUMPED_STUB("det_atomic_jumped_enter_stub", "det_atomic_jumped_enter")
JUMPED_STUB("det_atomic_jumped_leave_stub", "det_atomic_jumped_leave")
DET_HIDDEN void det_atomic_jumped_enter_stub(void);
DET_HIDDEN void det_atomic_jumped_leave_stub(void);

/* Whether sites can be jumped to: xsave enabled by the kernel (OSXSAVE),
 * and no shadow stack (the stubs return where no call was made). Sets
 * det_xsave_mask and det_xsave_bytes for this CPU. */
static int jumps_usable(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return 0;
	unsigned long long shstk = 0;
	if (det_sys(SYS_arch_prctl, 0x5005 /* ARCH_SHSTK_STATUS */, (long)&shstk, 0, 0, 0, 0) == 0 && (shstk & 1))
		return 0;
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	uint64_t mask = (((uint64_t)hi << 32) | lo) & 0xe7; /* x87 SSE AVX opmask ZMM_Hi256 Hi16_ZMM */
	uint64_t bytes = 576;                                   /* the legacy area and the header */
	for (unsigned i = 2; i < 8; i++) {
		if (!(mask & (1u << i)))
			continue;
		__cpuid_count(0xd, i, a, b, c, d);
		if ((uint64_t)b + a > bytes)
			bytes = (uint64_t)b + a;
	}
	det_xsave_mask = mask;
	det_xsave_bytes = bytes;
	return 1;
}

/* A jumped site's slot: the stub (over the red zone, the site's index, to
 * det_atomic_jumped_enter), the copy, and a stub to ..._leave. The two
 * stubs jump through words at `to`: enter's, then leave's. */
static void stub_at(uint8_t *c, uint32_t index, const uint8_t *to)
{
	static const uint8_t lea[] = {0x48, 0x8d, 0x64, 0x24, 0x80}; /* lea -128(%rsp), %rsp */
	memcpy(c, lea, sizeof(lea));
	c[5] = 0x68; /* push $index */
	memcpy(c + 6, &index, 4);
	c[10] = 0xff; /* jmp *to(%rip) */
	c[11] = 0x25;
	int32_t rel = (int32_t)(to - (c + STUB));
	memcpy(c + 12, &rel, 4);
}

/* ------------------------------------------------------------------ */
/* patching, before the program runs */

struct exe_span {
	uintptr_t bias, lo, hi;
};

static int exe_span(struct dl_phdr_info *info, size_t size, void *p)
{
	(void)size;
	struct exe_span *x = p;
	x->bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (!x->lo || lo < x->lo)
			x->lo = lo;
		if (hi > x->hi)
			x->hi = hi;
	}
	return 1; /* the first object is the executable */
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = ((const struct site *)a)->at, y = ((const struct site *)b)->at;
	return x < y ? -1 : x > y;
}

/* Out-of-line pages within reach of the executable's RIP-relative
 * displacements: below it, where nothing of the program's goes. */
static uint8_t *map_near(const struct exe_span *x, size_t len)
{
	size_t page = 4096, want = (len + page - 1) & ~(page - 1);
	for (uintptr_t gap = 1u << 20; gap < (1u << 30); gap += 1u << 20) {
		if (x->lo < gap + want)
			break;
		uintptr_t at = (x->lo - gap - want) & ~(page - 1);
		void *p = mmap((void *)at, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			       -1, 0);
		if (p == (void *)at)
			return p;
		if (p != MAP_FAILED)
			munmap(p, want);
	}
	return NULL;
}

/* Write n bytes over code at `at` (its pages writable for the while). */
static int patch_code(uintptr_t at, const uint8_t *v, size_t n)
{
	uintptr_t page = at & ~(uintptr_t)4095;
	size_t span = at + n - page;
	if (mprotect((void *)page, span, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		((volatile uint8_t *)at)[i] = v[i];
	mprotect((void *)page, span, PROT_READ | PROT_EXEC);
	return 1;
}

/* A trap over the instruction at `at` (what: for the message if it cannot
 * be written); the trap signal is det's entry's from the first one on. */
void det_trap_at(uintptr_t at, const uint8_t *trap, size_t len, const char *what)
{
	if (!det_traps_patched)
		det_signals_take_traps();
	det_traps_patched = 1;
	if (!patch_code(at, trap, len))
		det_fatal("cannot patch the %s at %#lx (mprotect)", what, (unsigned long)at);
}

void det_atomics_init(void)
{
	const char *env = getenv(SITES_ENV);
	if (!env || !*env)
		return;
	struct exe_span x = {0};
	dl_iterate_phdr(exe_span, &x);
	size_t n = 1;
	for (const char *p = env; *p; p++)
		n += *p == ',';
	struct site *all = mmap(NULL, n * sizeof(*all), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (all == MAP_FAILED)
		det_fatal("cannot map the table of %zu atomic sites", n);
	size_t k = 0;
	for (const char *p = env; *p;) {
		struct site *s = &all[k];
		memset(s, 0, sizeof(*s));
		char *end;
		unsigned long long v = strtoull(p, &end, 16);
		if (*end != ':')
			det_fatal("%s: not VADDR:BYTES at \"%.20s\"", SITES_ENV, p);
		s->at = x.bias + (uintptr_t)v;
		p = end + 1;
		while (hexval(p[0]) >= 0 && hexval(p[1]) >= 0 && s->len < MAX_LEN) {
			s->bytes[s->len++] = (uint8_t)(hexval(p[0]) << 4 | hexval(p[1]));
			p += 2;
		}
		if (*p == ',')
			p++;
		else if (*p)
			det_fatal("%s: not VADDR:BYTES at \"%.20s\"", SITES_ENV, p);
		if (s->at < x.lo || s->at + s->len > x.hi || memcmp((const void *)s->at, s->bytes, s->len) != 0)
			return; /* another executable's (an exec'd image inherits the variable) */
		if (decode(s))
			k++;
	}
	if (!k)
		return;
	qsort(all, k, sizeof(*all), by_address);
	size_t trap_len;
	const uint8_t *trap = det_trap_bytes(&trap_len);
	for (size_t i = 0; i < k; i++)
		if (all[i].len < trap_len) /* (every form decoded is 2 bytes or more) */
			det_fatal("trapped atomic at %#lx: too short for gdb's trap", (unsigned long)all[i].at);
	/* Under gdb every site traps: gdb would step into a jumped site's stubs. */
	int jumps = !(det_mode == DET_MODE_REPLAY && (det_hdr->flags & DET_F_ALL_ORDERED)) && jumps_usable();
	uint8_t *code = map_near(&x, k * SLOT + 16);
	if (!code)
		det_fatal("no room within 2 GiB of the executable for its %zu trapped atomics", k);
	uint8_t *to = code + k * SLOT; /* the stubs' targets, for jmp *to(%rip) */
	void (*const targets[2])(void) = {det_atomic_jumped_enter_stub, det_atomic_jumped_leave_stub};
	memcpy(to, targets, sizeof(targets));
	sites = all;
	nsites = k;
	tramp = code;
	for (size_t i = 0; i < k; i++) {
		struct site *s = &all[i];
		s->jumped = jumps && s->len >= 5; /* (jmp rel32) */
		uint8_t *c = copy_of(s);
		memcpy(c, s->bytes, s->len);
		if (s->base == -2) {
			/* the displacement from the copy's end to the same target */
			int64_t d = (int64_t)(s->at + s->len) + s->disp - (int64_t)(uintptr_t)(c + s->len);
			if (d != (int32_t)d)
				det_fatal("trapped atomic at %#lx: its target is out of reach of its copy", (unsigned long)s->at);
			int32_t d32 = (int32_t)d;
			memcpy(c + s->disp_off, &d32, 4);
		}
		if (s->jumped) {
			stub_at(c - STUB, (uint32_t)i, to);
			stub_at(c + s->len, (uint32_t)i, to + 8);
		} else {
			memcpy(c + s->len, trap, trap_len);
		}
	}
	mprotect(code, k * SLOT + 16, PROT_READ | PROT_EXEC);
	for (size_t i = 0; i < k; i++) {
		const struct site *s = &all[i];
		if (!s->jumped) {
			det_trap_at(s->at, trap, trap_len, "atomic");
			continue;
		}
		uint8_t jmp[MAX_LEN];
		memset(jmp, 0xcc, s->len);
		jmp[0] = 0xe9; /* jmp rel32 to the slot's stub */
		int32_t rel = (int32_t)((intptr_t)(copy_of(s) - STUB) - (intptr_t)(s->at + 5));
		memcpy(jmp + 1, &rel, 4);
		if (!patch_code(s->at, jmp, s->len))
			det_fatal("cannot patch the atomic at %#lx (mprotect)", (unsigned long)s->at);
	}
}
