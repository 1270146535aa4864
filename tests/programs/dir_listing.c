/*
 * tests/programs/dir_listing.c - list a directory the ways glibc reads it
 * with its own internal readdir (TLPI's list_files_readdir_r,
 * nftw_dir_tree): readdir_r, scandir (alphabetical) and nftw, each name
 * printed. The directory may change between the recording and a replay.
 *   dir_listing DIR
 */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int not_dot(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static int seen(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	printf("nftw: %s level %d %s\n", path + ftw->base, ftw->level,
	       type == FTW_D ? "dir" : type == FTW_F ? "file" : "other");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: dir_listing DIR\n");
		return 2;
	}
	DIR *dir = opendir(argv[1]);
	if (!dir) {
		perror("opendir");
		return 1;
	}
	int count = 0;
	struct dirent entry, *result;
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	while (readdir_r(dir, &entry, &result) == 0 && result)
		count += not_dot(result);
	closedir(dir);
	printf("readdir_r: %d names\n", count);
	struct dirent **names;
	int n = scandir(argv[1], &names, not_dot, alphasort);
	for (int i = 0; i < n; i++) {
		printf("scandir: %s\n", names[i]->d_name);
		free(names[i]);
	}
	free(names);
	if (nftw(argv[1], seen, 4, FTW_PHYS) != 0)
		perror("nftw");
	return 0;
}
