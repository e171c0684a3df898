/* The export macro of cltensor_models, the model library beside cltensor (cltensor/models.h). */
#ifndef CLTENSOR_MODELS_EXPORT_H
#define CLTENSOR_MODELS_EXPORT_H

#if defined(_WIN32) && defined(CLT_MODELS_BUILDING_SHARED)
#define CLT_MODELS_API __declspec(dllexport)
#elif defined(_WIN32) && !defined(CLT_STATIC)
#define CLT_MODELS_API __declspec(dllimport)
#elif defined(__GNUC__)
#define CLT_MODELS_API __attribute__((visibility("default")))
#else
#define CLT_MODELS_API
#endif

#endif
