/*
 * preload/stack.c - det's own stack: where det's work runs, off the
 * program's stack.
 *
 * Why: a program that reads an uninitialised local sees whatever earlier
 * calls left below its stack pointer. If det's work ran on the program's
 * stack, that residue would be det's, and it differs between recording and
 * replay (different code runs), so the program's memory would depend on
 * det's mode. Instead every entry point (preload/entries.def) is a stub
 * that moves to the thread's det stack, calls the implementation there and
 * moves back: on the program's stack the only trace of a call into det is
 * the return address its own `call` pushed, the same in every mode.
 *
 * Rules of this file:
 *  - A stub clobbers only r10 and r11 (scratch, never arguments) and keeps
 *    rax (the vector-register count of a variadic call): arguments, return
 *    values and the stack arguments' absence are the callee's as called.
 *    Entries take no arguments on the stack (entries.def says which
 *    variadic functions stay front-ends for that reason).
 *  - A call made while already on the det stack (det calling an exported
 *    function, a handler running inside det) stays there. Program code that
 *    det calls (pthread_once routines, signal handlers, thread start
 *    routines) runs on the program's stack, just below the point where the
 *    program entered det (det_call_on_program_stack), so it too finds the
 *    same bytes in every mode; entries it makes go below det's active
 *    frames on the det stack.
 *  - The stubs carry call-frame information (the caller's frame is found
 *    through the saved stack pointer), so unwinding crosses them: C++
 *    exceptions, pthread_exit and cancellation.
 *  - A thread's det stack is mapped when it attaches (the same mapping at
 *    the same point in every mode) and unmapped by a thread-specific-data
 *    destructor, after the thread has left every det frame; calls into det
 *    after that (other keys' destructors) stay on the program's stack.
 */
#include "runtime.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define DET_STACK_SIZE (512u << 10)
#define DET_STACK_GUARD 4096u
#define DET_STACKS_ADDR 0x100000000000UL /* T0's; the region ends below DET_SHM_ADDR */
_Static_assert(DET_STACKS_ADDR + 65536ull * (DET_STACK_SIZE + DET_STACK_GUARD) <= DET_SHM_ADDR,
	       "det stacks stay below the shared region");

__thread struct det_stack det_stk __attribute__((tls_model("initial-exec")));
static pthread_key_t stack_key;
static pthread_once_t stack_key_once = PTHREAD_ONCE_INIT;

_Static_assert(__builtin_offsetof(struct det_stack, lo) == 0 && __builtin_offsetof(struct det_stack, hi) == 8 &&
		       __builtin_offsetof(struct det_stack, sp) == 16 &&
		       __builtin_offsetof(struct det_stack, prog_sp) == 24 &&
		       __builtin_offsetof(struct det_stack, ra) == 32,
	       "the stubs below use these offsets");

void det_stack_free(void *base)
{
	det_sys(SYS_munmap, (long)base, DET_STACK_SIZE + DET_STACK_GUARD, 0, 0, 0, 0);
}

/* The key's destructor, in the exiting thread: its later calls into det
 * (other keys' destructors run after this one: V8's call pthread_once)
 * stay on the program's stack, as a thread without a det stack's do. */
static void stack_exit(void *base)
{
	if (det_stk.lo == (uintptr_t)base + DET_STACK_GUARD)
		memset(&det_stk, 0, sizeof(det_stk));
	det_stack_free(base);
}

static void make_key(void)
{
	/* (the real pthread_key_create and pthread_once: det does not interpose them) */
	pthread_key_create(&stack_key, stack_exit);
}

/* A new det stack for thread `num`, which is kept in its lowest word. Each
 * thread's is at a fixed address of its own, below the program's stacks
 * (so debuggers, which expect a caller's frame above its callee's, unwind
 * from det's frames into the program's) and away from its mappings (which
 * det's never move, whatever the order threads start in). */
void *det_stack_new(uint32_t num)
{
	uint64_t at = DET_STACKS_ADDR + (uint64_t)num * (DET_STACK_SIZE + DET_STACK_GUARD);
	long base = det_sys(SYS_mmap, (long)at, DET_STACK_SIZE + DET_STACK_GUARD, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK | MAP_FIXED_NOREPLACE, -1, 0);
	if (base < 0 && base > -4096 && base == -EEXIST) {
		/* (a fork's child reusing a number its parent's thread has: never,
		 * numbers are global; a stale one after exec: replace it) */
		base = det_sys(SYS_mmap, (long)at, DET_STACK_SIZE + DET_STACK_GUARD, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK | MAP_FIXED, -1, 0);
	}
	if (base < 0 && base > -4096)
		det_fatal("cannot map a det stack for T%u (%s)", num, strerror((int)-base));
	det_sys(SYS_mprotect, base, DET_STACK_GUARD, PROT_NONE, 0, 0, 0);
	*(uint32_t *)(base + DET_STACK_GUARD) = num;
	return (void *)base;
}

/* This thread's det stack is `base`; returns the number kept in it. */
uint32_t det_stack_adopt(void *base)
{
	det_stk.lo = (uintptr_t)base + DET_STACK_GUARD;
	det_stk.hi = det_stk.lo + DET_STACK_SIZE;
	det_stk.sp = det_stk.hi;
	det_stk.prog_sp = 0;
	det_stk.ra = 0;
	real.pthread_once(&stack_key_once, make_key);
	pthread_setspecific(stack_key, base);
	return *(uint32_t *)det_stk.lo;
}

/* The thread's det stack, mapped now if it has none (T0, and a process's
 * thread after exec). A created thread's is mapped by its creator, at the
 * creating event, so that det's mappings come in the same order in every
 * run, whatever the threads' timing. */
void det_stack_attach(uint32_t num)
{
	if (!det_stk.hi)
		det_stack_adopt(det_stack_new(num));
}

/* After fork, the child's thread keeps its det stack (a copy), and its key. */

/*
 * The stub of one entry point. On the program's stack: move to the det
 * stack (from its top for an outermost entry, below the frames in use when
 * program code called back from det calls in again), saving the program's
 * stack pointer and the outer entry's return address and program stack
 * pointer there, and call the implementation; then restore them and return
 * on the program's stack. Frame on the det stack at the call:
 *   rsp+0 padding, rsp+8 the program's rsp, rsp+16 the outer ra,
 *   rsp+24 the outer program rsp; CFA = *(rsp+8) + 8.
 */
#define DET_STUB(name, impl, binding) DET_STUB_CLEARING(name, impl, binding, "xorl %edx, %edx\n")

/* The registers a caller cannot expect kept (other than the result in rax,
 * and in rdx when `rdx` is empty: a two-word result) are cleared on the
 * way back: they hold det's values, which differ between modes, and a
 * program may read one as an uninitialised variable (or spill it, as a
 * variadic function's prologue does). */
#define DET_CLEAR_SCRATCH(rdx)                                                                     \
	rdx "xorl %ecx, %ecx\nxorl %esi, %esi\nxorl %edi, %edi\nxorl %r8d, %r8d\nxorl %r9d, %r9d\n"   \
	    "xorl %r10d, %r10d\nxorl %r11d, %r11d\n"                                                \
	    "pxor %xmm0, %xmm0\npxor %xmm1, %xmm1\npxor %xmm2, %xmm2\npxor %xmm3, %xmm3\n"          \
	    "pxor %xmm4, %xmm4\npxor %xmm5, %xmm5\npxor %xmm6, %xmm6\npxor %xmm7, %xmm7\n"          \
	    "pxor %xmm8, %xmm8\npxor %xmm9, %xmm9\npxor %xmm10, %xmm10\npxor %xmm11, %xmm11\n"      \
	    "pxor %xmm12, %xmm12\npxor %xmm13, %xmm13\npxor %xmm14, %xmm14\npxor %xmm15, %xmm15\n"

#define DET_STUB_CLEARING(name, impl, binding, rdx)                                                \
	__asm__(".text\n"                                                                          \
		"." binding " " name "\n"                                                          \
		".type " name ", @function\n"                                                      \
		".p2align 4\n" name ":\n"                                                          \
		".cfi_startproc\n"                                                                 \
		"movq det_stk@gottpoff(%rip), %r11\n"                                              \
		DET_STACK_PICK(impl)                                                               \
		"xchgq %r10, %rsp\n"                                                               \
		"pushq %fs:24(%r11)\n"                                                             \
		"pushq %fs:32(%r11)\n"                                                             \
		"pushq %r10\n"                                                                     \
		"subq $8, %rsp\n"                                                                  \
		".cfi_escape 0x0f, 0x05, 0x77, 0x08, 0x06, 0x23, 0x08\n"                           \
		"movq %r10, %fs:24(%r11)\n"                                                        \
		"movq (%r10), %r10\n"                                                              \
		"movq %r10, %fs:32(%r11)\n"                                                        \
		"call " impl "\n"                                                                  \
		"movq det_stk@gottpoff(%rip), %r11\n"                                              \
		"movq 16(%rsp), %r10\n"                                                            \
		"movq %r10, %fs:32(%r11)\n"                                                        \
		"movq 24(%rsp), %r10\n"                                                            \
		"movq %r10, %fs:24(%r11)\n"                                                        \
		"movq 8(%rsp), %rsp\n"                                                             \
		".cfi_def_cfa %rsp, 8\n"                                                           \
		DET_CLEAR_SCRATCH(rdx)                                                             \
		"ret\n"                                                                            \
		".cfi_endproc\n"                                                                   \
		".size " name ", .-" name "\n");

#define DET_ENTRY(name) DET_STUB(#name, "det_impl_" #name, "globl")
#define DET_ALIAS(name, other) DET_STUB(#name, "det_impl_" #other, "globl")
#include "entries.def"
#undef DET_ENTRY
#undef DET_ALIAS

/* det's own functions that run on the det stack when called from the
 * program's stack (a thread's start, the variadic front-ends). */
DET_STUB_CLEARING("det_thread_begin", "det_impl_det_thread_begin", "hidden det_thread_begin\n.globl", "")
DET_STUB("det_thread_end", "det_impl_det_thread_end", "hidden det_thread_end\n.globl")
DET_STUB("det_stdio_va", "det_impl_det_stdio_va", "hidden det_stdio_va\n.globl")
DET_STUB("det_stdin_va", "det_impl_det_stdin_va", "hidden det_stdin_va\n.globl")
DET_STUB("det_drand48", "det_impl_det_drand48", "hidden det_drand48\n.globl")
DET_STUB("det_device_entropy", "det_impl_det_device_entropy", "hidden det_device_entropy\n.globl")
DET_STUB("det_omp_share", "det_impl_det_omp_share", "hidden det_omp_share\n.globl")
DET_STUB("det_clone", "det_impl_det_clone", "hidden det_clone\n.globl")
DET_STUB("det_mq_register", "det_impl_det_mq_register", "hidden det_mq_register\n.globl")

/*
 * fn(arg) on the program's stack, just below where the program entered det,
 * when called on the det stack; else where it is. Entries fn makes put
 * their det frames below the caller's.
 */
__asm__(".text\n"
	".globl det_call_on_program_stack\n"
	".hidden det_call_on_program_stack\n"
	".type det_call_on_program_stack, @function\n"
	".p2align 4\n"
	"det_call_on_program_stack:\n"
	".cfi_startproc\n"
	"pushq %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"movq %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"pushq %rbx\n"
	".cfi_offset %rbx, -24\n"
	"pushq %r12\n"
	".cfi_offset %r12, -32\n"
	"movq %rdi, %rax\n"
	"movq %rsi, %rdi\n"
	"movq det_stk@gottpoff(%rip), %r11\n"
	"cmpq %fs:8(%r11), %rsp\n"
	"jae 1f\n"
	"cmpq %fs:0(%r11), %rsp\n"
	"jb 1f\n"
	"movq %fs:24(%r11), %r12\n"
	"testq %r12, %r12\n"
	"jz 1f\n"
	"movq %fs:16(%r11), %rbx\n" /* the det stack's free top, restored after */
	"movq %rsp, %r10\n"
	"andq $-16, %r10\n"
	"movq %r10, %fs:16(%r11)\n"
	"andq $-16, %r12\n"
	"movq %r12, %rsp\n"
	"call *%rax\n"
	"movq det_stk@gottpoff(%rip), %r11\n"
	"movq %rbx, %fs:16(%r11)\n"
	"jmp 2f\n"
	"1:\n"
	"andq $-16, %rsp\n"
	"call *%rax\n"
	"2:\n"
	"movq -8(%rbp), %rbx\n"
	"movq -16(%rbp), %r12\n"
	"movq %rbp, %rsp\n"
	"popq %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size det_call_on_program_stack, .-det_call_on_program_stack\n");

/*
 * fn(arg) with its stack starting at top (16-byte aligned): a handler the
 * program asked to run on its alternate stack (SA_ONSTACK) that det
 * delivers itself. While on the det stack, the entries fn makes go below
 * det's frames in use, as det_call_on_program_stack's do: the free top is
 * moved below them, and every entry counts as nested (the program's stack
 * pointer at the last entry set above any).
 */
__asm__(".text\n"
	".globl det_call_on_stack\n"
	".hidden det_call_on_stack\n"
	".type det_call_on_stack, @function\n"
	".p2align 4\n"
	"det_call_on_stack:\n"
	".cfi_startproc\n"
	"pushq %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"movq %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"pushq %rbx\n"
	".cfi_offset %rbx, -24\n"
	"pushq %r12\n"
	".cfi_offset %r12, -32\n"
	"movq %rdi, %rax\n"
	"movq %rsi, %rdi\n"
	"movq det_stk@gottpoff(%rip), %r11\n"
	"movq %fs:16(%r11), %rbx\n" /* the free top and the last entry's program rsp, restored after */
	"movq %fs:24(%r11), %r12\n"
	"cmpq %fs:8(%r11), %rsp\n"
	"jae 1f\n"
	"cmpq %fs:0(%r11), %rsp\n"
	"jb 1f\n"
	"movq %rsp, %r10\n"
	"andq $-16, %r10\n"
	"movq %r10, %fs:16(%r11)\n"
	"movq $-1, %fs:24(%r11)\n"
	"1:\n"
	"andq $-16, %rdx\n"
	"movq %rdx, %rsp\n"
	"call *%rax\n"
	"movq det_stk@gottpoff(%rip), %r11\n"
	"movq %rbx, %fs:16(%r11)\n"
	"movq %r12, %fs:24(%r11)\n"
	"movq -8(%rbp), %rbx\n"
	"movq -16(%rbp), %r12\n"
	"movq %rbp, %rsp\n"
	"popq %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size det_call_on_stack, .-det_call_on_stack\n");

/*
 * fn() on the boot stack: det_init's work (preload/runtime.c), which runs
 * before the thread has a det stack and differs between modes. Only the
 * thread that won det_init's start uses it, once per process image.
 */
#define DET_BOOT_STACK_SIZE 131072 /* (the assembly below says it again) */
static char det_boot_stack[DET_BOOT_STACK_SIZE] __attribute__((aligned(64), used));

__asm__(".text\n"
	".globl det_call_on_boot_stack\n"
	".hidden det_call_on_boot_stack\n"
	".type det_call_on_boot_stack, @function\n"
	".p2align 4\n"
	"det_call_on_boot_stack:\n"
	".cfi_startproc\n"
	"pushq %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"movq %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"leaq det_boot_stack+131072(%rip), %rsp\n"
	"call *%rdi\n"
	"movq %rbp, %rsp\n"
	"popq %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size det_call_on_boot_stack, .-det_call_on_boot_stack\n");
