/*
 * Independent PDF signature validator for the tests, built on the EU DSS library (Digital Signature
 * Service, the European Commission's implementation of ETSI EN 319 102-1 validation).
 *
 * Compiled by install.sh beside this file into .local/validators/pdf/classes; the class path is the
 * DSS jars that install.sh fetched from Maven Central with pom.xml. Fully offline: no AIA, CRL or
 * OCSP fetching, no trusted lists; the only trust anchors are the certificates given with --trusted.
 *
 * Modes (each prints one JSON object on stdout; diagnostics go to stderr):
 *
 *   validate --pdf FILE --trusted PEM [--trusted PEM ...] [--intermediates PEM ...]
 *            [--policy b-b-offline|default] [--validation-time ISO-8601] [--detached CONTENT]
 *            (a detached CAdES signature is given as --pdf, with the content it signs as --detached)
 *       Validates every signature of the PDF. The verdict fields come from the chosen policy
 *       (b-b-offline unless told); each signature also carries the verdict of DSS's unmodified
 *       default policy under "defaultPolicy", computed from the same diagnostic data.
 *       Exit 0 when the document could be analysed (whatever the verdicts), 2 on bad usage,
 *       1 on any other failure.
 *
 *   sign --pdf IN --out OUT --p12 FILE --password PW [--digest SHA256|SHA384|SHA512] [--reason TEXT]
 *       Signs IN as PAdES-BASELINE-B with the first key of the PKCS#12 file (fixtures for tests).
 *
 *   selftest
 *       Makes a root CA and a signer in memory (BouncyCastle), a one-page PDF (PDFBox), signs it
 *       with DSS as PAdES-BASELINE-B and validates it with the root trusted; exit 0 when the
 *       verdict is TOTAL_PASSED. install.sh runs it once (and records a class-data archive).
 */

import eu.europa.esig.dss.detailedreport.DetailedReport;
import eu.europa.esig.dss.detailedreport.jaxb.XmlBasicBuildingBlocks;
import eu.europa.esig.dss.detailedreport.jaxb.XmlConclusion;
import eu.europa.esig.dss.detailedreport.jaxb.XmlConstraintsConclusion;
import eu.europa.esig.dss.diagnostic.CertificateWrapper;
import eu.europa.esig.dss.diagnostic.DiagnosticData;
import eu.europa.esig.dss.diagnostic.PDFRevisionWrapper;
import eu.europa.esig.dss.diagnostic.SignatureWrapper;
import eu.europa.esig.dss.diagnostic.jaxb.XmlDigestMatcher;
import eu.europa.esig.dss.enumerations.DigestAlgorithm;
import eu.europa.esig.dss.enumerations.Indication;
import eu.europa.esig.dss.enumerations.Level;
import eu.europa.esig.dss.enumerations.SignatureLevel;
import eu.europa.esig.dss.enumerations.SubIndication;
import eu.europa.esig.dss.enumerations.TokenExtractionStrategy;
import eu.europa.esig.dss.jaxb.object.Message;
import eu.europa.esig.dss.model.DSSDocument;
import eu.europa.esig.dss.model.FileDocument;
import eu.europa.esig.dss.model.InMemoryDocument;
import eu.europa.esig.dss.model.SignatureValue;
import eu.europa.esig.dss.model.ToBeSigned;
import eu.europa.esig.dss.model.x509.CertificateToken;
import eu.europa.esig.dss.pades.PAdESSignatureParameters;
import eu.europa.esig.dss.pades.signature.PAdESService;
import eu.europa.esig.dss.policy.EtsiValidationPolicy;
import eu.europa.esig.dss.policy.ValidationPolicyFacade;
import eu.europa.esig.dss.policy.jaxb.BasicSignatureConstraints;
import eu.europa.esig.dss.policy.jaxb.CertificateConstraints;
import eu.europa.esig.dss.policy.jaxb.ConstraintsParameters;
import eu.europa.esig.dss.policy.jaxb.LevelConstraint;
import eu.europa.esig.dss.simplereport.SimpleReport;
import eu.europa.esig.dss.spi.validation.CommonCertificateVerifier;
import eu.europa.esig.dss.spi.x509.CommonCertificateSource;
import eu.europa.esig.dss.spi.x509.CommonTrustedCertificateSource;
import eu.europa.esig.dss.token.DSSPrivateKeyEntry;
import eu.europa.esig.dss.token.Pkcs12SignatureToken;
import eu.europa.esig.dss.validation.SignedDocumentValidator;
import eu.europa.esig.dss.validation.executor.signature.DefaultSignatureProcessExecutor;
import eu.europa.esig.dss.validation.reports.Reports;
import eu.europa.esig.dss.model.policy.ValidationPolicy;
import org.apache.pdfbox.pdmodel.PDDocument;
import org.apache.pdfbox.pdmodel.PDPage;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public final class DssPdfValidator {

    static final String DSS_VERSION = "6.4";

    /** Thrown for bad command lines: exit code 2. */
    static final class UsageException extends Exception {
        UsageException(String message) {
            super(message);
        }
    }

    public static void main(String[] args) {
        // slf4j-simple logs to stderr; DSS's INFO/WARN chatter (e.g. "No revocation found") is noise here.
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "error");
        }
        try {
            if (args.length == 0) throw new UsageException("a mode is required: validate, sign or selftest");
            Map<String, List<String>> opts = parseOptions(args);
            String json;
            switch (args[0]) {
                case "validate":
                    json = validate(opts);
                    break;
                case "sign":
                    json = sign(opts);
                    break;
                case "selftest":
                    json = selftest();
                    break;
                default:
                    throw new UsageException("unknown mode '" + args[0] + "': use validate, sign or selftest");
            }
            System.out.println(json);
            System.out.flush();
            System.exit(0);
        } catch (UsageException e) {
            System.err.println("dss-pdf-validator: usage error: " + e.getMessage());
            System.err.println("usage: validate --pdf FILE --trusted PEM [--trusted PEM ...] [--intermediates PEM ...]"
                    + " [--policy b-b-offline|default] [--validation-time ISO-8601] [--detached CONTENT]");
            System.err.println("       sign --pdf IN --out OUT --p12 FILE --password PW [--digest SHA256] [--reason TEXT]");
            System.err.println("       selftest");
            System.exit(2);
        } catch (Throwable e) {
            System.err.println("dss-pdf-validator: " + e);
            e.printStackTrace(System.err);
            System.exit(1);
        }
    }

    // --- command line -------------------------------------------------------------------------------

    static Map<String, List<String>> parseOptions(String[] args) throws UsageException {
        Map<String, List<String>> opts = new LinkedHashMap<>();
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) throw new UsageException("unexpected argument '" + a + "'");
            if (i + 1 >= args.length) throw new UsageException("option " + a + " needs a value");
            opts.computeIfAbsent(a.substring(2), k -> new ArrayList<>()).add(args[++i]);
        }
        return opts;
    }

    static String one(Map<String, List<String>> opts, String name, String fallback) throws UsageException {
        List<String> v = opts.get(name);
        if (v == null || v.isEmpty()) {
            if (fallback != null) return fallback;
            throw new UsageException("--" + name + " is required");
        }
        if (v.size() > 1) throw new UsageException("--" + name + " given more than once");
        return v.get(0);
    }

    static List<String> many(Map<String, List<String>> opts, String name) {
        List<String> v = opts.get(name);
        return v == null ? new ArrayList<>() : v;
    }

    static File existingFile(String path) throws UsageException {
        File f = new File(path);
        if (!f.isFile()) throw new UsageException("no such file: " + path);
        return f;
    }

    /** Every certificate of a PEM (or DER) file, in order. */
    static List<CertificateToken> loadCertificates(File file) throws Exception {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        List<CertificateToken> tokens = new ArrayList<>();
        try (InputStream in = Files.newInputStream(file.toPath())) {
            Collection<? extends Certificate> certs = cf.generateCertificates(in);
            for (Certificate c : certs) tokens.add(new CertificateToken((X509Certificate) c));
        }
        if (tokens.isEmpty()) throw new UsageException("no certificate in " + file);
        return tokens;
    }

    // --- validation ---------------------------------------------------------------------------------

    /**
     * DSS's default policy (constraint.xml, "QES AES/QC AES TL based") with the revocation constraints
     * of the signing certificate and of CA certificates lowered from FAIL to WARN: a PAdES-BASELINE-B
     * signature carries no revocation data and this validator fetches none (offline). Everything else,
     * including signature integrity, byte range, certificate chain to a trust anchor, validity period,
     * key usage and cryptographic strength, stays as DSS ships it.
     */
    static ConstraintsParameters loadDefaultConstraints() throws Exception {
        try (InputStream in = EtsiValidationPolicy.class.getResourceAsStream("/policy/constraint.xml")) {
            if (in == null) throw new IllegalStateException("DSS default policy /policy/constraint.xml not on the class path");
            return ValidationPolicyFacade.newFacade().unmarshall(in);
        }
    }

    static ValidationPolicy bbOfflinePolicy() throws Exception {
        ConstraintsParameters cp = loadDefaultConstraints();
        cp.setName("DSS default policy, revocation checks lowered to WARN (PAdES-BASELINE-B, offline)");
        BasicSignatureConstraints bsc = cp.getSignatureConstraints().getBasicSignatureConstraints();
        for (CertificateConstraints cc : new CertificateConstraints[] {bsc.getSigningCertificate(), bsc.getCACertificate()}) {
            if (cc == null) continue;
            lower(cc.getRevocationDataAvailable());
            lower(cc.getAcceptableRevocationDataFound());
            lower(cc.getRevocationIssuerNotExpired());
        }
        return new EtsiValidationPolicy(cp);
    }

    static void lower(LevelConstraint c) {
        if (c != null && c.getLevel() == Level.FAIL) c.setLevel(Level.WARN);
    }

    static String validate(Map<String, List<String>> opts) throws Exception {
        long started = System.nanoTime();
        File pdf = existingFile(one(opts, "pdf", null));
        List<String> trusted = many(opts, "trusted");
        if (trusted.isEmpty()) throw new UsageException("at least one --trusted PEM file is required");
        String policyName = one(opts, "policy", "b-b-offline");
        if (!policyName.equals("b-b-offline") && !policyName.equals("default")) {
            throw new UsageException("--policy must be b-b-offline or default");
        }
        String validationTime = one(opts, "validation-time", "");

        CommonTrustedCertificateSource trustedSource = new CommonTrustedCertificateSource();
        for (String path : trusted) {
            for (CertificateToken t : loadCertificates(existingFile(path))) trustedSource.addCertificate(t);
        }
        CommonCertificateSource adjunct = new CommonCertificateSource();
        for (String path : many(opts, "intermediates")) {
            for (CertificateToken t : loadCertificates(existingFile(path))) adjunct.addCertificate(t);
        }

        // Offline: no AIA source (the no-argument constructor would add one), no CRL or OCSP source.
        CommonCertificateVerifier verifier = new CommonCertificateVerifier(true);
        verifier.setAIASource(null);
        verifier.setCrlSource(null);
        verifier.setOcspSource(null);
        verifier.setTrustedCertSources(trustedSource);
        verifier.setAdjunctCertSources(adjunct);

        SignedDocumentValidator validator = SignedDocumentValidator.fromDocument(new FileDocument(pdf));
        // A detached CAdES signature (.p7s, given as --pdf) is validated over the content it signs.
        String detached = one(opts, "detached", "");
        if (!detached.isEmpty()) {
            validator.setDetachedContents(java.util.Collections.singletonList(new FileDocument(existingFile(detached))));
        }
        validator.setCertificateVerifier(verifier);
        validator.setTokenExtractionStrategy(TokenExtractionStrategy.EXTRACT_CERTIFICATES_ONLY);
        if (!validationTime.isEmpty()) validator.setValidationTime(Date.from(Instant.parse(validationTime)));

        ValidationPolicy defaultPolicy = new EtsiValidationPolicy(loadDefaultConstraints());
        ValidationPolicy chosen = policyName.equals("default") ? defaultPolicy : bbOfflinePolicy();
        long analysed = System.nanoTime();
        Reports reports = validator.validateDocument(chosen);

        // The same diagnostic data under DSS's unmodified default policy, for comparison.
        DefaultSignatureProcessExecutor executor = new DefaultSignatureProcessExecutor();
        executor.setDiagnosticData(reports.getDiagnosticDataJaxb());
        executor.setValidationPolicy(defaultPolicy);
        executor.setCurrentTime(reports.getSimpleReport().getValidationTime());
        Reports defaultReports = executor.execute();
        long validated = System.nanoTime();

        SimpleReport simple = reports.getSimpleReport();
        DetailedReport detailed = reports.getDetailedReport();
        DiagnosticData diag = reports.getDiagnosticData();

        Json out = new Json();
        out.put("tool", "EU DSS " + DSS_VERSION + " (SignedDocumentValidator)");
        out.put("policy", policyName);
        out.put("policyDescription", policyName.equals("default")
                ? "DSS default validation policy (constraint.xml), unmodified"
                : "DSS default validation policy (constraint.xml) with signing-certificate and CA-certificate "
                        + "revocation constraints (RevocationDataAvailable, AcceptableRevocationDataFound, "
                        + "RevocationIssuerNotExpired) lowered from FAIL to WARN");
        out.put("validationTime", iso(simple.getValidationTime()));
        out.put("signaturesCount", simple.getSignaturesCount());
        out.put("validSignaturesCount", simple.getValidSignaturesCount());
        List<Object> sigs = new ArrayList<>();
        for (String id : simple.getSignatureIdList()) {
            sigs.add(describeSignature(id, simple, detailed, diag, defaultReports));
        }
        out.put("signatures", sigs);
        Json timing = new Json();
        timing.put("setupMs", (analysed - started) / 1_000_000);
        timing.put("validationMs", (validated - analysed) / 1_000_000);
        out.put("timing", timing);
        return out.toString();
    }

    static Json describeSignature(String id, SimpleReport simple, DetailedReport detailed, DiagnosticData diag,
            Reports defaultReports) throws Exception {
        SignatureWrapper sig = diag.getSignatureById(id);
        Json s = new Json();
        s.put("id", id);
        s.put("indication", str(simple.getIndication(id)));
        s.put("subIndication", str(simple.getSubIndication(id)));
        SignatureLevel format = simple.getSignatureFormat(id);
        s.put("signatureFormat", format == null ? null : format.toString());
        s.put("signatureIntact", sig.isSignatureIntact());
        s.put("signatureValid", sig.isSignatureValid());
        boolean dataFound = !sig.getDigestMatchers().isEmpty();
        boolean dataIntact = dataFound;
        for (XmlDigestMatcher m : sig.getDigestMatchers()) {
            dataFound &= m.isDataFound();
            dataIntact &= m.isDataIntact();
        }
        s.put("signedDataFound", dataFound);
        s.put("signedDataIntact", dataIntact);

        XmlBasicBuildingBlocks bbb = detailed.getBasicBuildingBlockById(id);
        Json bb = new Json();
        if (bbb != null) {
            bb.put("formatChecking", conclusion(bbb.getFC()));
            bb.put("identificationOfSigningCertificate", conclusion(bbb.getISC()));
            bb.put("validationContextInitialization", conclusion(bbb.getVCI()));
            bb.put("x509CertificateValidation", conclusion(bbb.getXCV()));
            bb.put("cryptographicVerification", conclusion(bbb.getCV()));
            bb.put("signatureAcceptanceValidation", conclusion(bbb.getSAV()));
            bb.put("overall", conclusion(bbb.getConclusion()));
        }
        s.put("basicBuildingBlocks", bb);

        CertificateWrapper signer = sig.getSigningCertificate();
        if (signer != null) {
            Json c = new Json();
            c.put("sha256", signer.getBinaries() == null ? null : hex(sha256(signer.getBinaries())));
            c.put("subject", signer.getCertificateDN());
            c.put("issuer", signer.getCertificateIssuerDN());
            c.put("serialNumber", signer.getSerialNumber());
            c.put("notBefore", iso(signer.getNotBefore()));
            c.put("notAfter", iso(signer.getNotAfter()));
            s.put("signerCertificate", c);
        } else {
            s.put("signerCertificate", null);
        }
        List<Object> chain = new ArrayList<>();
        boolean chainTrusted = false;
        for (CertificateWrapper c : sig.getCertificateChain()) {
            Json j = new Json();
            j.put("subject", c.getCertificateDN());
            j.put("sha256", c.getBinaries() == null ? null : hex(sha256(c.getBinaries())));
            j.put("trusted", c.isTrusted());
            j.put("selfSigned", c.isSelfSigned());
            chain.add(j);
            chainTrusted |= c.isTrusted();
        }
        s.put("certificateChain", chain);
        s.put("chainTrusted", chainTrusted);
        s.put("signingTime", iso(simple.getSigningTime(id)));
        s.put("claimedSigningTime", iso(sig.getClaimedSigningTime()));

        PDFRevisionWrapper rev = sig.getPDFRevision();
        if (rev != null) {
            Json p = new Json();
            p.put("fieldNames", new ArrayList<Object>(rev.getSignatureFieldNames()));
            p.put("filter", rev.getFilter());
            p.put("subFilter", rev.getSubFilter());
            List<Object> br = new ArrayList<>();
            for (BigInteger b : rev.getSignatureByteRange()) br.add(b.longValue());
            p.put("byteRange", br);
            p.put("byteRangeValid", rev.isSignatureByteRangeValid());
            p.put("modificationsDetected", rev.arePdfModificationsDetected());
            s.put("pdf", p);
        }

        s.put("errors", messages(simple.getAdESValidationErrors(id)));
        s.put("warnings", messages(simple.getAdESValidationWarnings(id)));
        s.put("infos", messages(simple.getAdESValidationInfo(id)));

        SimpleReport def = defaultReports.getSimpleReport();
        Json d = new Json();
        d.put("indication", str(def.getIndication(id)));
        d.put("subIndication", str(def.getSubIndication(id)));
        d.put("errors", messages(def.getAdESValidationErrors(id)));
        s.put("defaultPolicy", d);
        return s;
    }

    static Json conclusion(XmlConstraintsConclusion c) {
        return c == null ? null : conclusion(c.getConclusion());
    }

    static Json conclusion(XmlConclusion c) {
        if (c == null) return null;
        Json j = new Json();
        j.put("indication", str(c.getIndication()));
        j.put("subIndication", str(c.getSubIndication()));
        return j;
    }

    static List<Object> messages(List<Message> list) {
        List<Object> out = new ArrayList<>();
        if (list == null) return out;
        for (Message m : list) {
            Json j = new Json();
            j.put("key", m.getKey());
            j.put("message", m.getValue());
            out.add(j);
        }
        return out;
    }

    static String str(Indication i) {
        return i == null ? null : i.name();
    }

    static String str(SubIndication i) {
        return i == null ? null : i.name();
    }

    static String iso(Date d) {
        return d == null ? null : d.toInstant().toString();
    }

    static byte[] sha256(byte[] data) throws Exception {
        return MessageDigest.getInstance("SHA-256").digest(data);
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    // --- signing (fixtures) -------------------------------------------------------------------------

    static DSSDocument signPades(DSSDocument pdf, Pkcs12SignatureToken token, DigestAlgorithm digest, String reason) {
        DSSPrivateKeyEntry key = token.getKeys().get(0);
        PAdESSignatureParameters params = new PAdESSignatureParameters();
        params.setSignatureLevel(SignatureLevel.PAdES_BASELINE_B);
        params.setDigestAlgorithm(digest);
        params.setSigningCertificate(key.getCertificate());
        params.setCertificateChain(key.getCertificateChain());
        if (reason != null) params.setReason(reason);
        PAdESService service = new PAdESService(new CommonCertificateVerifier(true));
        ToBeSigned toBeSigned = service.getDataToSign(pdf, params);
        SignatureValue value = token.sign(toBeSigned, digest, key);
        return service.signDocument(pdf, params, value);
    }

    static String sign(Map<String, List<String>> opts) throws Exception {
        File in = existingFile(one(opts, "pdf", null));
        File out = new File(one(opts, "out", null));
        File p12 = existingFile(one(opts, "p12", null));
        String password = one(opts, "password", null);
        DigestAlgorithm digest = DigestAlgorithm.valueOf(one(opts, "digest", "SHA256"));
        String reason = one(opts, "reason", "");
        try (Pkcs12SignatureToken token = new Pkcs12SignatureToken(p12,
                new KeyStore.PasswordProtection(password.toCharArray()))) {
            DSSDocument signed = signPades(new FileDocument(in), token, digest, reason.isEmpty() ? null : reason);
            signed.save(out.getPath());
        }
        Json j = new Json();
        j.put("signed", out.getPath());
        j.put("signatureLevel", SignatureLevel.PAdES_BASELINE_B.toString());
        return j.toString();
    }

    // --- self-test ----------------------------------------------------------------------------------

    static String selftest() throws Exception {
        KeyPairGenerator ec = KeyPairGenerator.getInstance("EC");
        ec.initialize(new ECGenParameterSpec("secp256r1"));
        KeyPair rootKeys = ec.generateKeyPair();
        KeyPair leafKeys = ec.generateKeyPair();
        long now = System.currentTimeMillis();
        Date from = new Date(now - 3_600_000L);
        Date to = new Date(now + 86_400_000L);
        JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();

        X500Name rootName = new X500Name("CN=DSS self-test root,O=pdf-validator");
        X509v3CertificateBuilder rb = new JcaX509v3CertificateBuilder(rootName, BigInteger.ONE, from, to, rootName,
                rootKeys.getPublic());
        rb.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
        rb.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
        rb.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(rootKeys.getPublic()));
        X509Certificate root = new JcaX509CertificateConverter().getCertificate(
                rb.build(new JcaContentSignerBuilder("SHA256withECDSA").build(rootKeys.getPrivate())));

        X509v3CertificateBuilder lb = new JcaX509v3CertificateBuilder(root, BigInteger.TWO, from, to,
                new X500Name("CN=DSS self-test signer,O=pdf-validator"), leafKeys.getPublic());
        lb.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
        lb.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.nonRepudiation));
        lb.addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(root));
        lb.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(leafKeys.getPublic()));
        X509Certificate leaf = new JcaX509CertificateConverter().getCertificate(
                lb.build(new JcaContentSignerBuilder("SHA256withECDSA").build(rootKeys.getPrivate())));

        char[] pw = "selftest".toCharArray();
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setKeyEntry("signer", leafKeys.getPrivate(), pw, new Certificate[] {leaf, root});
        ByteArrayOutputStream p12 = new ByteArrayOutputStream();
        ks.store(p12, pw);

        ByteArrayOutputStream pdfBytes = new ByteArrayOutputStream();
        try (PDDocument doc = new PDDocument()) {
            doc.addPage(new PDPage());
            doc.save(pdfBytes);
        }
        DSSDocument signed;
        try (Pkcs12SignatureToken token = new Pkcs12SignatureToken(p12.toByteArray(), new KeyStore.PasswordProtection(pw))) {
            signed = signPades(new InMemoryDocument(pdfBytes.toByteArray(), "selftest.pdf"), token, DigestAlgorithm.SHA256,
                    "self-test");
        }

        File dir = Files.createTempDirectory("dss-selftest").toFile();
        try {
            File pdf = new File(dir, "signed.pdf");
            signed.save(pdf.getPath());
            File rootPem = new File(dir, "root.pem");
            Files.write(rootPem.toPath(), pem(root).getBytes(StandardCharsets.US_ASCII));
            Map<String, List<String>> opts = new LinkedHashMap<>();
            opts.put("pdf", List.of(pdf.getPath()));
            opts.put("trusted", List.of(rootPem.getPath()));
            String report = validate(opts);
            boolean passed = report.contains("\"indication\":\"TOTAL_PASSED\"")
                    && report.contains("\"signatureFormat\":\"PAdES-BASELINE-B\"");
            if (!passed) throw new IllegalStateException("self-test signature did not validate: " + report);
            Json j = new Json();
            j.put("selftest", "passed");
            j.put("tool", "EU DSS " + DSS_VERSION);
            return j.toString();
        } finally {
            for (File f : dir.listFiles()) f.delete();
            dir.delete();
        }
    }

    static String pem(X509Certificate cert) throws Exception {
        String b64 = java.util.Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                .encodeToString(cert.getEncoded());
        return "-----BEGIN CERTIFICATE-----\n" + b64 + "\n-----END CERTIFICATE-----\n";
    }

    // --- a minimal JSON writer (no JSON library on the DSS class path) ------------------------------

    static final class Json {
        private final Map<String, Object> fields = new LinkedHashMap<>();

        void put(String key, Object value) {
            fields.put(key, value);
        }

        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder();
            write(sb, this);
            return sb.toString();
        }

        static void write(StringBuilder sb, Object v) {
            if (v == null) {
                sb.append("null");
            } else if (v instanceof Json) {
                sb.append('{');
                boolean first = true;
                for (Map.Entry<String, Object> e : ((Json) v).fields.entrySet()) {
                    if (!first) sb.append(',');
                    first = false;
                    string(sb, e.getKey());
                    sb.append(':');
                    write(sb, e.getValue());
                }
                sb.append('}');
            } else if (v instanceof List) {
                sb.append('[');
                boolean first = true;
                for (Object o : (List<?>) v) {
                    if (!first) sb.append(',');
                    first = false;
                    write(sb, o);
                }
                sb.append(']');
            } else if (v instanceof Boolean || v instanceof Integer || v instanceof Long) {
                sb.append(v);
            } else {
                string(sb, v.toString());
            }
        }

        static void string(StringBuilder sb, String s) {
            sb.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"': sb.append("\\\""); break;
                    case '\\': sb.append("\\\\"); break;
                    case '\n': sb.append("\\n"); break;
                    case '\r': sb.append("\\r"); break;
                    case '\t': sb.append("\\t"); break;
                    default:
                        if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                        else sb.append(c);
                }
            }
            sb.append('"');
        }
    }
}
