#include "metrics.h"

struct metrics metrics;
