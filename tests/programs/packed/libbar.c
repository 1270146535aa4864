/* tests/programs/packed/libbar.c - dlopen'ed by main (see main.c). */
int bar_value(void)
{
	return 1000;
}
