/* tests/programs/packed/libfoo.c - linked into main (see main.c). */
int foo_value(void)
{
	return 1;
}
