/*
 * tests/programs/keep_libs/libval.c - the library a "system update"
 * replaces: tests/e2e/test_keep_libs.py builds it with -DVAL=1, records,
 * then builds it again at the same path with -DVAL=2 (other bytes).
 */
int val(void)
{
	return VAL;
}
