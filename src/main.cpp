// The trainer executable: everything happens in run_trainer (app/app.cpp).
#include "hpctrain/app/app.hpp"

int main(int argc, char** argv) { return hpctrain::run_trainer(argc, argv); }
