/*
 * tests/programs/omp_share.c - an OpenMP program (GCC's libgomp) whose
 * output says which thread got each share of work (dynamic, guided and
 * runtime loop schedules, long and unsigned long long loops, sections,
 * single) and in which order threads took its locks (omp_lock_t,
 * omp_nest_lock_t, a named critical section, the atomic region): all first
 * come, first served in libgomp, so natively it changes from run to run.
 */
#include <omp.h>
#include <stdio.h>

#define N 4000
#define BIG (1ull << 63)

static int owner[N], owner_u[N], guided[N], runtime_[N];
static int order[256], norder, nest_order[256], nnest;
static int sect[4], single_by = -1, named_order[64], nnamed;
static omp_lock_t lock;
static omp_nest_lock_t nest;
static long double total; /* `atomic` on a long double goes through GOMP_atomic_start */

static void work(int i)
{
	volatile double x = 0;
	for (int k = 0; k < 200 + (i * 7919) % 500; k++)
		x += k;
}

int main(void)
{
	omp_set_schedule(omp_sched_dynamic, 3); /* schedule(runtime) */
	omp_init_lock(&lock);
	omp_init_nest_lock(&nest);
#pragma omp parallel num_threads(4)
	{
		int me = omp_get_thread_num();
#pragma omp for schedule(dynamic, 7)
		for (int i = 0; i < N; i++) {
			work(i);
			owner[i] = me;
		}
#pragma omp for schedule(dynamic, 5)
		for (unsigned long long u = BIG; u < BIG + N; u++) { /* libgomp's unsigned long long loops */
			work((int)(u - BIG));
			owner_u[u - BIG] = me;
		}
#pragma omp for schedule(guided)
		for (int i = 0; i < N; i++) {
			work(i);
			guided[i] = me;
		}
#pragma omp for schedule(runtime)
		for (int i = 0; i < N; i++) {
			work(i);
			runtime_[i] = me;
		}
#pragma omp sections
		{
#pragma omp section
			sect[0] = me;
#pragma omp section
			sect[1] = me;
#pragma omp section
			sect[2] = me;
#pragma omp section
			sect[3] = me;
		}
#pragma omp single
		single_by = me;
		for (int k = 0; k < 8; k++) {
			work(k * 13 + me);
			omp_set_lock(&lock);
			order[norder++] = me;
			omp_unset_lock(&lock);
			omp_set_nest_lock(&nest);
			omp_set_nest_lock(&nest);
			nest_order[nnest++] = me;
			omp_unset_nest_lock(&nest);
			omp_unset_nest_lock(&nest);
#pragma omp critical(tally)
			named_order[nnamed++] = me;
#pragma omp atomic
			total += me;
		}
		while (!omp_test_lock(&lock))
			;
		order[norder++] = 20 + me;
		omp_unset_lock(&lock);
	}
	omp_destroy_lock(&lock);
	omp_destroy_nest_lock(&nest);
	unsigned long h = 5381;
	for (int i = 0; i < N; i++)
		h = h * 33 + (unsigned)(owner[i] * 64 + owner_u[i] * 16 + guided[i] * 4 + runtime_[i]);
	printf("loops %lx sections %d%d%d%d single %d total %.0Lf\n", h, sect[0], sect[1], sect[2], sect[3],
	       single_by, total);
	printf("locks");
	for (int i = 0; i < norder; i++)
		printf(" %d", order[i]);
	printf("\nnest");
	for (int i = 0; i < nnest; i++)
		printf(" %d", nest_order[i]);
	printf("\nnamed");
	for (int i = 0; i < nnamed; i++)
		printf(" %d", named_order[i]);
	printf("\n");
	return 0;
}
