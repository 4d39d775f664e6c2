/* FNV-1a, 64 bits: a quick, stable hash of a string (not for adversaries). */
#ifndef EXECD_FNV_H
#define EXECD_FNV_H

#include <stdint.h>

uint64_t	fnv1a64(const char *s);

#endif
