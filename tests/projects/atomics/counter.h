/* tests/projects/atomics/counter.h - the library's interface. */
#ifndef COUNTER_H
#define COUNTER_H
void counter_add(long n);
long counter_get(void);
#endif
