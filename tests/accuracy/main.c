/*
 * `make accuracy`: prints how far the estimator is from measured runs. Reads the calibration
 * files under RIGFIT_TEST_DATA (default tests/data) and the profiles under RIGFIT_SRC_DIR
 * (default .); needs no network and no GPU. Exit status 0 when every median meets its target,
 * 1 when one does not, 2 when the files cannot be read.
 */
#include <stdio.h>

#include "tests/accuracy/accuracy.h"
#include "tests/test.h"

int main(void)
{
	int speed = accuracy_speed(t_data_dir(), t_src_dir(), stdout);
	int memory, training;

	printf("\n");
	memory = accuracy_memory(t_data_dir());
	training = accuracy_training(t_data_dir());
	if (speed < 0 || memory < 0)
		return 2;
	return (speed || memory || training) ? 1 : 0;
}
