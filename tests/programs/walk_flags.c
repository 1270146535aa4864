/*
 * tests/programs/walk_flags.c - nftw with the flags given, then ftw, over
 * DIR: each call's path, type, base, level, and the working directory's
 * last name (FTW_CHDIR); FTW_ACTIONRETVAL skips any subtree named "sub".
 * Under det these are det's own walks (preload/dirs.c): the output must
 * be glibc's.
 *   walk_flags DIR FLAGS
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int skip;

static int seen(const char *path, const struct stat *st, int type, struct FTW *f)
{
	char cwd[4096];
	if (!getcwd(cwd, sizeof cwd))
		strcpy(cwd, "?");
	printf("%s type %d base %d level %d dir %d cwd %s\n", path, type, f->base, f->level,
	       type != FTW_NS && S_ISDIR(st->st_mode), strrchr(cwd, '/'));
	return skip && strstr(path + f->base, "sub") && type == FTW_D ? FTW_SKIP_SUBTREE : 0;
}

static int seen_old(const char *path, const struct stat *st, int type)
{
	(void)st;
	printf("ftw %s %d\n", path, type);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: walk_flags DIR FLAGS\n");
		return 2;
	}
	int flags = atoi(argv[2]);
	skip = flags & FTW_ACTIONRETVAL;
	printf("nftw %d\n", nftw(argv[1], seen, 3, flags));
	printf("ftw %d\n", ftw(argv[1], seen_old, 3));
	return 0;
}
